import type { Config } from '../config.js';
import type { Settings } from '../config-file.js';
import { invalid } from '../domain/errors.js';

/**
 * Where the service these commands are configured for answers, found from the configuration the
 * other commands read (the configuration file under the environment): PUBLIC_URL when it is set,
 * else http://HOST:PORT, with a wildcard HOST (0.0.0.0, ::) reached on loopback. `rewards listen`
 * and `rewards demo` use it when no --api-url (or REWARDS_API_URL) names another deployment.
 */
export interface ServiceUrl {
  url: URL;
  /** Where it came from, in words, for messages: `PORT and HOST (defaults)`, `PUBLIC_URL (in /etc/rewards/rewards.env)`. */
  origin: string;
}

const WILDCARD: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1', '[::]': '[::1]' };

function where(settings: Settings, names: string[]): string {
  const sources = names.map((name) => settings.sourceOf(name));
  if (sources.every((source) => source === 'default')) return `${names.join(' and ')} (defaults)`;
  const file = settings.file ? `in ${settings.file.path}` : 'in the configuration file';
  return names.map((name, i) => `${name} (${sources[i] === 'config file' ? file : sources[i]})`).join(' and ');
}

export function configuredServiceUrl(config: Config, settings: Settings): ServiceUrl {
  if (settings.sourceOf('PUBLIC_URL') !== 'default') return { url: new URL(config.publicUrl), origin: where(settings, ['PUBLIC_URL']) };
  const host = WILDCARD[config.host] ?? config.host;
  return { url: new URL(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${config.port}`), origin: where(settings, ['PORT', 'HOST']) };
}

/**
 * Refuses (exit 2) when nothing answers /health/live at the configured address: the service is not
 * running, or runs with other settings than these commands see.
 */
export async function requireRunningService(service: ServiceUrl, start: string): Promise<void> {
  try {
    const response = await fetch(new URL('/health/live', service.url), { signal: AbortSignal.timeout(5_000) });
    await response.body?.cancel();
    if (response.status < 500) return;
  } catch {
    /* below */
  }
  throw invalid(
    `no service answers at ${service.url.origin}, the address from ${service.origin}. ${start}, with the same configuration (the same rewards.env, or the same PORT, HOST or PUBLIC_URL in the environment); or name the deployment: --api-url URL (or REWARDS_API_URL)`,
  );
}
