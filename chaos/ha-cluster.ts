// A highly available PostgreSQL on loopback (scripts/ha-setup.sh: etcd, two Patroni nodes with
// synchronous replication, HAProxy in front) and three ways to lose its primary, for the failover
// chaos runs. Needs root (iptables, signals to the postgres user's processes).
import { execFile, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';

const SCRIPT = new URL('../scripts/ha-setup.sh', import.meta.url).pathname;
/** The comment on every iptables rule added here: `ha-setup.sh stop` removes the rules that carry it. */
const TAG = 'rewards-ha';

interface HaNode {
  name: string;
  /** This node's PostgreSQL directly, not through HAProxy. */
  url: string;
  /** This node's Patroni REST API. */
  api: string;
  /** Its processes now: Patroni restarts PostgreSQL (after a switchover, say) under new pids. */
  pids(): { patroni: number | undefined; postgres: number[] };
}

export interface HaCluster {
  /** Through HAProxy: whichever node is the primary. */
  url: string;
  /** Where the configuration, pid files and logs are (HA_DIR). */
  dir: string;
  nodes: HaNode[];
  /** The node holding the leader key now, as Patroni's REST API tells (either node may answer). */
  primary(): Promise<string>;
  /** SIGKILL the primary's Patroni and every PostgreSQL process of it at once: a host that dies. Returns the node killed. */
  killPrimary(): Promise<string>;
  /**
   * The primary stops answering and closes nothing: every packet to or from its PostgreSQL and REST
   * ports is dropped and its Patroni is SIGSTOPped (no leader key renewal, no demotion). Returns the node silenced.
   */
  silencePrimary(): Promise<string>;
  /** A planned switchover to the other node, requested from Patroni; returns once requested (the node that was primary). */
  switchover(): Promise<string>;
  /** Polls the address every 100 ms until a writable primary other than `previous` answers; `reachableAt` is Date.now() then. */
  waitForNewPrimary(previous: string, timeoutMs: number): Promise<{ node: string; reachableAt: number }>;
  /** Stops everything (SIGKILL, SIGSTOPped processes included) and removes the iptables rules, whatever state a fault left. */
  stop(): Promise<void>;
}

interface SetupOutput {
  url: string;
  dir: string;
  nodes: { name: string; url: string; api: string }[];
}

/** Starts a fresh cluster (whatever an earlier one left is stopped and wiped first). */
export async function startHaCluster(options: { dir?: string; portBase?: number } = {}): Promise<HaCluster> {
  const env = { ...process.env, ...(options.dir ? { HA_DIR: options.dir } : {}), ...(options.portBase ? { HA_PORT_BASE: String(options.portBase) } : {}) };
  const run = (args: string[]) => promisify(execFile)('bash', [SCRIPT, ...args], { env });
  let output: SetupOutput;
  try {
    output = JSON.parse((await run([])).stdout) as SetupOutput;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? '';
    await run(['stop']).catch(() => undefined);
    throw new Error(`ha-setup.sh failed: ${stderr.slice(-3000) || String(error)}`, { cause: error });
  }

  const nodes: HaNode[] = output.nodes.map((node) => ({ ...node, pids: () => processesOf(output.dir, node.name) }));
  const byName = (name: string) => nodes.find((node) => node.name === name) ?? failWith(`no node named ${name}`);
  const port = (url: string) => Number(new URL(url).port);
  let switchoverFailure: Error | undefined;

  const primary = async () => {
    // Every node answers from etcd's leader key; asking all at once, a silenced one costs nothing.
    const leaders = nodes.map(async (node) => {
      const response = await fetch(`${node.api}/cluster`, { signal: AbortSignal.timeout(3000) });
      const cluster = (await response.json()) as { members: { name: string; role: string }[] };
      return cluster.members.find((member) => member.role === 'leader')?.name ?? failWith(`${node.name} knows no leader`);
    });
    return Promise.any(leaders).catch(() => failWith('no node names a leader now'));
  };

  return {
    url: output.url,
    dir: output.dir,
    nodes,
    primary,
    async killPrimary() {
      const leader = await primary();
      const { patroni, postgres } = byName(leader).pids();
      for (const pid of [...(patroni ? [patroni] : []), ...postgres]) signal(pid, 'SIGKILL');
      return leader;
    },
    async silencePrimary() {
      const leader = await primary();
      const node = byName(leader);
      // On lo every packet passes INPUT, both directions: matching either port as source or
      // destination (multiport --ports) drops the requests and the answers. A DROP in INPUT makes
      // no error for the sender either: its data just never arrives, as from a host gone silent.
      const ports = `${port(node.url)},${port(node.api)}`;
      execFileSync('iptables', ['-I', 'INPUT', '-i', 'lo', '-p', 'tcp', '-m', 'multiport', '--ports', ports, '-m', 'comment', '--comment', TAG, '-j', 'DROP']);
      const { patroni } = node.pids();
      if (patroni) signal(patroni, 'SIGSTOP');
      return leader;
    },
    async switchover() {
      const leader = await primary();
      const candidate = nodes.find((node) => node.name !== leader)!.name;
      // Patroni answers once the switchover is over (it polls once a second): the request is sent
      // and not awaited, so that waitForNewPrimary times it. A refusal surfaces there.
      switchoverFailure = undefined;
      void fetch(`${byName(leader).api}/switchover`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ leader, candidate }) })
        .then(async (response) => {
          if (!response.ok) switchoverFailure = new Error(`switchover refused: ${response.status} ${await response.text()}`);
        })
        .catch((error: Error) => (switchoverFailure = error));
      return leader;
    },
    async waitForNewPrimary(previous, timeoutMs) {
      const until = Date.now() + timeoutMs;
      while (Date.now() < until) {
        if (switchoverFailure) throw switchoverFailure;
        const answer = await probe(output.url);
        const node = answer && !answer.recovery ? nodes.find((candidate) => port(candidate.url) === answer.port) : undefined;
        if (node && node.name !== previous) return { node: node.name, reachableAt: Date.now() };
        await sleep(100);
      }
      throw new Error(`no primary other than ${previous} answered at ${output.url} within ${timeoutMs} ms`);
    },
    async stop() {
      await run(['stop']);
    },
  };
}

/**
 * One try with a fresh connection: a short connect and query timeout, so that a try that meets a
 * silent node ends by itself; undefined when it fails.
 */
async function probe(url: string): Promise<{ recovery: boolean; port: number } | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000, query_timeout: 1000 });
  client.on('error', () => undefined); // a connection cut after connecting is one more failed try
  try {
    await client.connect();
    const { rows } = await client.query<{ recovery: boolean; port: string }>(`select pg_is_in_recovery() as recovery, current_setting('port') as port`);
    return { recovery: rows[0]!.recovery, port: Number(rows[0]!.port) };
  } catch {
    return undefined;
  } finally {
    // Not awaited: ending a connection to a silent node waits for nothing useful (pg destroys the
    // socket of a connection with a query still pending).
    void client.end().catch(() => undefined);
  }
}

/**
 * A node's Patroni (from its pid file) and its PostgreSQL: the postmaster (from postmaster.pid) and
 * its children, each in a session of its own. A pid counts only while its command line names the
 * cluster's directory: a pid file outlives its process (a killed node's postmaster.pid stays).
 */
function processesOf(dir: string, name: string): { patroni: number | undefined; postgres: number[] } {
  const firstLine = (file: string) => {
    try {
      const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${dir}/`) ? pid : undefined;
    } catch {
      return undefined;
    }
  };
  const postmaster = firstLine(`${dir}/${name}/data/postmaster.pid`);
  const children: number[] = [];
  if (postmaster) {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        // The parent pid is the second field after the command name, which may hold spaces and parentheses.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) children.push(Number(entry));
      } catch {
        /* exited meanwhile */
      }
    }
  }
  return { patroni: firstLine(`${dir}/${name}.pid`), postgres: postmaster ? [postmaster, ...children] : [] };
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    /* gone already */
  }
}

function failWith(message: string): never {
  throw new Error(message);
}
