/** A time as the API and the notifications write it: ISO 8601 in UTC, with milliseconds. */
export const iso = (ms: number): string => new Date(ms).toISOString();
