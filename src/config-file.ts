import { readFileSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { CONFIG_VARIABLES, ConfigError, type Env } from './config.js';
import { editDistance } from './domain/edit-distance.js';

/**
 * The configuration file: the service's settings as `KEY=VALUE` lines, read by `rewards serve` and
 * by every other command, so that an operator's command finds the database and the SECRET_KEY the
 * service uses (docs/operators.md, "Where the commands find the configuration").
 *
 * Which file: `--config FILE`, else the file REWARDS_CONFIG names, else the first of
 * DEFAULT_CONFIG_FILES that exists; none is fine (the environment and the defaults). Each variable
 * set and not empty in the environment wins over the file.
 *
 * The same file serves as a systemd EnvironmentFile, so only what both read alike is accepted:
 * `KEY=VALUE`, the value bare or in "double" or 'single' quotes, comments on lines of their own.
 * Every key must be one of the service's settings (CONFIG_VARIABLES): a misspelt key is an error
 * naming it, not a setting silently left at its default. Paths must be absolute: the service and
 * an operator's shell run in different directories.
 */
export const DEFAULT_CONFIG_FILES: readonly string[] = ['rewards.env', '/etc/rewards/rewards.env'];

export type ConfigFileFrom = '--config' | 'REWARDS_CONFIG' | 'default location';
type SettingSource = 'environment' | 'config file' | 'default';

interface ConfigFile {
  /** Absolute path. */
  path: string;
  from: ConfigFileFrom;
  values: Readonly<Record<string, string>>;
}

export interface Settings {
  /** What loadConfig reads: the environment, with the file's value for each variable the environment leaves unset or empty. */
  env: Env;
  file: ConfigFile | undefined;
  /** The default locations looked at (absolute), when neither --config nor REWARDS_CONFIG named a file. */
  searched: string[];
  sourceOf(name: string): SettingSource;
}

const PATH_KEYS = new Set(['DATA_DIR', 'MTLS_CERT_FILE', 'MTLS_KEY_FILE', 'MTLS_CA_FILE']);

/** "given with --config", "named by REWARDS_CONFIG", "found at its default location". */
export function describeFrom(from: ConfigFileFrom): string {
  if (from === '--config') return 'given with --config';
  if (from === 'REWARDS_CONFIG') return 'named by REWARDS_CONFIG';
  return 'found at its default location';
}

/** Reads the settings: the configuration file (if any) under the environment. */
export function loadSettings(options: { configFile?: string | undefined; env: Env; cwd?: string }): Settings {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env;
  let file: ConfigFile | undefined;
  const searched: string[] = [];
  const named: [string, ConfigFileFrom] | undefined = options.configFile ? [options.configFile, '--config'] : env.REWARDS_CONFIG ? [env.REWARDS_CONFIG, 'REWARDS_CONFIG'] : undefined;
  if (named) {
    const path = resolve(cwd, named[0]);
    file = { path, from: named[1], values: readConfigFile(path, named[1]) };
  } else {
    for (const candidate of DEFAULT_CONFIG_FILES) {
      const path = resolve(cwd, candidate);
      searched.push(path);
      if (fileExists(path)) {
        file = { path, from: 'default location', values: readConfigFile(path, 'default location') };
        break;
      }
    }
  }
  const merged: Env = { ...env };
  const given = (value: string | undefined) => value !== undefined && value !== '';
  for (const [key, value] of Object.entries(file?.values ?? {})) if (!given(env[key])) merged[key] = value;
  return {
    env: merged,
    file,
    searched,
    sourceOf: (name) => (given(env[name]) ? 'environment' : given(file?.values[name]) ? 'config file' : 'default'),
  };
}

/** Whether a default location holds a file. Not being allowed to look is an error: guessing "no" would use the defaults, another database. */
function fileExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw new ConfigError(
      `cannot tell whether the configuration file ${path} exists (${code ?? (error as Error).message}): run as a user who may read it, e.g. the service's own user, or name another file with --config FILE`,
    );
  }
}

function readConfigFile(path: string, from: ConfigFileFrom): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const hint = code === 'ENOENT' ? 'there is no such file' : code === 'EACCES' ? "permission denied: run as a user who may read it, e.g. the service's own user" : (error as Error).message;
    throw new ConfigError(`cannot read the configuration file ${path} (${describeFrom(from)}): ${hint}`);
  }
  return parseConfigFile(text, path);
}

/** The settings in a configuration file's text; every mistake in it (with its line) in one ConfigError. */
function parseConfigFile(text: string, path: string): Record<string, string> {
  const problems: { line: number; text: string }[] = [];
  const problem = (line: number, text: string) => problems.push({ line, text: `line ${line}: ${text}` });
  const lines = new Map<string, number>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    if (/^export\s/.test(line)) {
      problem(index + 1, `write KEY=VALUE without "export" (a systemd EnvironmentFile does not take it)`);
      return;
    }
    const match = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (!match) {
      problem(index + 1, `expected KEY=VALUE, got "${line.length > 60 ? `${line.slice(0, 60)}…` : line}"`);
      return;
    }
    const key = match[1]!;
    const value = match[2]!;
    if (!Object.hasOwn(CONFIG_VARIABLES, key)) {
      const near = closestVariable(key);
      problem(index + 1, `${key} is not a setting of the service${near ? ` (did you mean ${near}?)` : ''}`);
      return;
    }
    if (lines.has(key)) {
      problem(index + 1, `${key} is set again (first on line ${lines.get(key)}); keep one`);
      return;
    }
    lines.set(key, index + 1);
    if (/^["']/.test(value) && !/^(["']).*\1$/.test(value)) {
      problem(index + 1, `the quoted value of ${key} must end with its quote, on the same line (a comment goes on a line of its own)`);
    } else if (/^[`]/.test(value)) {
      problem(index + 1, `quote the value of ${key} with "double" or 'single' quotes`);
    } else if (!/^["']/.test(value) && value.includes('#')) {
      // Node's parser ends the value at "#", systemd keeps it: the two would disagree.
      problem(index + 1, `the value of ${key} holds a "#": quote the value, or put the comment on a line of its own`);
    }
  });
  const parsed = parseEnv(text);
  const values: Record<string, string> = {};
  for (const [key, line] of lines) {
    const value = parsed[key] ?? '';
    values[key] = value;
    const path = key === 'DATABASE_URL' && value.startsWith('sqlite:') ? value.slice('sqlite:'.length) : PATH_KEYS.has(key) ? value : undefined;
    if (path && path !== ':memory:' && !isAbsolute(path)) {
      problem(line, `${key} must name an absolute path here ("${value}"): the service and the commands run in different directories, and a relative path would mean another place for each`);
    }
  }
  if (problems.length > 0) {
    const list = problems.sort((a, b) => a.line - b.line).map((p) => p.text);
    throw new ConfigError(`Invalid configuration file ${path}:\n  - ${list.join('\n  - ')}`);
  }
  return values;
}

/** The known variable a misspelt key most likely meant (a few letters off, or another case). */
function closestVariable(key: string): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of Object.keys(CONFIG_VARIABLES)) {
    const distance = name === key.toUpperCase() ? 0 : editDistance(key.toUpperCase(), name);
    if (distance < bestDistance) [best, bestDistance] = [name, distance];
  }
  return bestDistance <= Math.max(2, Math.floor(key.length / 4)) ? best : undefined;
}
