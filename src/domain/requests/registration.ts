import type { Experience, Prize } from '../experiences/experience.js';
import { REQUEST_ERROR_CODES, type RequestErrorCode } from './error-codes.js';

/** The experience as registration saw it; processing builds its items from this copy. */
export interface ExperienceSnapshot {
  id: string;
  name: string;
  title: string;
  prizes: Prize[];
}

export type RegistrationDecision = { outcome: 'registered'; rewardValue: number | undefined; snapshot: ExperienceSnapshot } | { outcome: 'rejected'; errorCode: RequestErrorCode; message: string };

export interface RegistrationInput {
  /** Whether the request's account is active now: a deactivated account's requests are not registered. */
  accountActive: boolean;
  experienceName: string;
  /** The account's experience with that name, if any. */
  experience: Experience | undefined;
  event: string | null;
  /** `data` as sent; undefined when absent. */
  data: unknown;
}

/** Σ value × quantity, rounded; undefined when there is no reward (the seed omits it then). */
export function rewardValueOf(prizes: ReadonlyArray<{ value: number; quantity: number }>): number | undefined {
  const total = Math.round(prizes.reduce((sum, prize) => sum + prize.value * prize.quantity, 0));
  return total > 0 ? total : undefined;
}

const reject = (errorCode: RequestErrorCode, message: string): RegistrationDecision => ({ outcome: 'rejected', errorCode, message });

/** Registration rules of PRODUCT.md §6, checked in this order. Pure. */
export function decideRegistration(input: RegistrationInput): RegistrationDecision {
  const { experience } = input;
  if (!input.accountActive) return reject('ACCOUNT_INACTIVE', REQUEST_ERROR_CODES.ACCOUNT_INACTIVE);
  if (!experience) return reject('EXPERIENCE_NOT_FOUND', `experience "${input.experienceName}" does not exist`);
  if (!experience.active) return reject('EXPERIENCE_INACTIVE', `experience "${experience.name}" is not active`);
  if (experience.events.length > 0 && (input.event === null || !experience.events.includes(input.event))) {
    const allowed = experience.events.join(', ');
    return reject(
      'EVENT_NOT_ALLOWED',
      input.event === null ? `experience "${experience.name}" requires an event (${allowed})` : `event "${input.event}" is not allowed for experience "${experience.name}" (${allowed})`,
    );
  }
  const { data } = input;
  if (data !== undefined && (data === null || typeof data !== 'object' || Array.isArray(data))) {
    return reject('INVALID_DATA', REQUEST_ERROR_CODES.INVALID_DATA.replaceAll('`', ''));
  }
  return {
    outcome: 'registered',
    rewardValue: rewardValueOf(experience.prizes),
    snapshot: { id: experience.id, name: experience.name, title: experience.title, prizes: experience.prizes },
  };
}
