/**
 * Embedded EVM chain manager: runs a local `anvil` node as a child process of
 * the service, persisting its state to `<dataDir>/chain.json`.
 *
 * - The child shares our process group (no `detached`), so `kill -<pgid>` of
 *   the service also takes the chain down.
 * - `<dataDir>/anvil.pid` records the running node; a later start on the same
 *   data dir adopts a healthy orphan instead of starting a second anvil.
 * - `<dataDir>/anvil.lock` serialises concurrent starts on one data dir.
 * - anvil writes its state on SIGINT/SIGTERM and every `--state-interval`
 *   seconds; a SIGKILL loses whatever happened since the last periodic dump.
 * - anvil rewrites chain.json IN PLACE (truncate + write, not atomic): a SIGKILL
 *   or power cut during a dump leaves an empty/truncated file. We therefore keep
 *   `<dataDir>/chain.json.bak`, a verified-complete copy taken at start and every
 *   minute, and fall back to it when anvil refuses chain.json.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import readline from 'node:readline';
import type { Logger } from 'pino';
import { isAlive, lowerPriority } from './processes.js';
import { anvilBinaryPath } from './binary.js';
import { HOST, portInUseError, portIsFree, resumeAutomine, waitForChainId } from './endpoint.js';
import { LOCK_FILE, PID_FILE, acquireLock, readPidFile, removePidFile, writePidFile } from './pid-lock.js';
import { argValue, findAnvilsOnState, isAnvilArgv, readCmdline } from './process-scan.js';
import { AdoptedChain, ChildChain, terminatePid, type EmbeddedChain } from './running-chain.js';
import { STATE_FILE, STATE_INTERVAL_S, backupState, timestampForFilename } from './state.js';

export type { EmbeddedChain };

export interface EmbeddedChainOptions {
  dataDir: string;
  port: number;
  chainId: number;
  logger: Logger;
  /**
   * Seconds between interval-mined blocks (mixed mining: transactions are still mined at once). Unset
   * (the default): automine only, a block per transaction and none while idle, so an idle chain's
   * state does not grow.
   */
  blockTime?: number;
  /**
   * With blockTime: false mines transactions only in the interval's blocks, as a public chain does (a
   * development chain of its own, `mintworks chain start`); true (the default) also mines each at once.
   */
  mixedMining?: boolean;
  /**
   * Nice value the node runs at (0–19; WORKER_NICE): its work is the workers' minting, which gives way
   * to answering requests when the CPU is saturated, as the workers' thread itself does.
   */
  nice?: number;
}

/**
 * The block gas limit of the embedded chain: ten times a public chain's 30M, so that a broadcast of
 * several mint transactions (up to 16M gas each) fits in one block (see chain/broadcaster.ts).
 */
export const EMBEDDED_BLOCK_GAS_LIMIT = 300_000_000;
const READY_TIMEOUT_MS = 20_000;
const ADOPT_PROBE_MS = 5_000;
const TAIL_LINES = 20;

class CorruptStateError extends Error {}

// ---------------------------------------------------------------------------

/** What the steps of a start share: the node's settings, its files and the logger. */
interface Setup {
  port: number;
  chainId: number;
  blockTime: number | undefined;
  /** With blockTime: also mine each transaction at once (see EmbeddedChainOptions.mixedMining). */
  mixedMining: boolean;
  dataDir: string;
  statePath: string;
  pidPath: string;
  files: { pidPath: string; statePath: string };
  rpcUrl: string;
  log: Logger;
  /** Lowers the node's priority once it answers: its threads exist by then, and later ones inherit it. */
  runsAtNice(pid: number): void;
}

export async function startEmbeddedChain(opts: EmbeddedChainOptions): Promise<EmbeddedChain> {
  const { port, chainId } = opts;
  const blockTime = opts.blockTime;
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`ANVIL_PORT must be a TCP port, got ${port}`);
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new Error(`invalid chain id ${chainId}`);
  if (blockTime !== undefined && !(blockTime > 0)) throw new Error(`blockTime must be > 0 seconds, got ${blockTime}`);

  const dataDir = path.resolve(opts.dataDir);
  const statePath = path.join(dataDir, STATE_FILE);
  const pidPath = path.join(dataDir, PID_FILE);
  const log = opts.logger;
  const setup: Setup = {
    port,
    chainId,
    blockTime,
    mixedMining: opts.mixedMining !== false,
    dataDir,
    statePath,
    pidPath,
    files: { pidPath, statePath },
    rpcUrl: `http://${HOST}:${port}`,
    log,
    runsAtNice: (pid) => {
      if (!opts.nice) return;
      try {
        lowerPriority(pid, opts.nice);
      } catch (err) {
        log.warn({ anvilPid: pid, err: (err as Error).message }, "could not lower the embedded chain's CPU priority (WORKER_NICE)");
      }
    },
  };
  await fsp.mkdir(dataDir, { recursive: true });

  const release = await acquireLock(path.join(dataDir, LOCK_FILE), log);
  try {
    const adopted = await adoptRunningNode(setup);
    if (adopted) return adopted;
    removePidFile(pidPath);
    return await startFreshNode(setup);
  } finally {
    release();
  }
}

/**
 * Reconciles with whatever a previous run left behind: a node of this data dir on the right port and
 * chain is adopted; one that is not anvil, belongs to another data dir, or answers wrongly is left alone
 * or stopped.
 */
async function adoptRunningNode(setup: Setup): Promise<EmbeddedChain | null> {
  const { port, chainId, statePath, pidPath, rpcUrl, log } = setup;
  const pf = readPidFile(pidPath, log);
  const candidates = new Set<number>();
  if (pf) candidates.add(pf.pid);
  for (const pid of findAnvilsOnState(statePath)) candidates.add(pid);

  let adoptPid: number | null = null;
  for (const pid of candidates) {
    if (pid === process.pid) continue;
    if (!isAlive(pid)) {
      log.info({ anvilPid: pid }, 'removing stale anvil pidfile (process is gone)');
      continue;
    }
    const argv = readCmdline(pid);
    if (!argv || !isAnvilArgv(argv)) {
      log.warn({ anvilPid: pid }, 'anvil pidfile points at a process that is not anvil (pid reused); removing pidfile');
      continue;
    }
    const st = argValue(argv, '--state');
    if (!st || path.resolve(st) !== statePath) {
      log.warn({ anvilPid: pid, state: st }, 'anvil pidfile points at an anvil for another data dir; leaving it alone');
      continue;
    }
    const itsPort = Number(argValue(argv, '--port'));
    if (adoptPid === null && itsPort === port) {
      const itsChainId = await waitForChainId(rpcUrl, ADOPT_PROBE_MS);
      if (itsChainId === chainId && isAlive(pid)) {
        adoptPid = pid;
        continue;
      }
      log.warn(
        { anvilPid: pid, port, expectedChainId: chainId, chainId: itsChainId },
        'running anvil on this data dir answers with the wrong chain id (or not at all); restarting it',
      );
    } else {
      log.warn({ anvilPid: pid, port: itsPort, expectedPort: port }, 'running anvil on this data dir uses another port; restarting it');
    }
    await terminatePid(pid, log);
  }
  if (adoptPid === null) return null;
  if (pf?.pid !== adoptPid) writePidFile(pidPath, { pid: adoptPid, port, chainId, startedAt: new Date().toISOString() });
  log.info({ anvilPid: adoptPid, rpcUrl }, 'adopted already running embedded anvil');
  setup.runsAtNice(adoptPid);
  // A service that died while a broadcast had automining paused (chain/broadcaster.ts) left it so.
  if (setup.blockTime === undefined) {
    const failed = await resumeAutomine(rpcUrl, ADOPT_PROBE_MS);
    if (failed) log.warn({ rpcUrl, err: failed }, 'could not resume automining on the adopted anvil; the tracker mines what it holds');
  }
  return new AdoptedChain(rpcUrl, adoptPid, setup.files, log);
}

/**
 * Starts a node on the saved state. A state file the node refuses is moved aside: the last good backup
 * takes its place once, else the chain starts empty; both are said loudly.
 */
async function startFreshNode(setup: Setup): Promise<EmbeddedChain> {
  const { statePath, log } = setup;
  if (!(await portIsFree(setup.port))) throw portInUseError(setup.port, setup.dataDir);
  await fsp.rm(`${statePath}.bak.tmp`, { force: true });
  let triedBackup = false;
  for (;;) {
    try {
      return await launch(setup);
    } catch (err) {
      if (!(err instanceof CorruptStateError)) throw err;
      const aside = `${statePath}.corrupt-${timestampForFilename()}`;
      await fsp.rename(statePath, aside);
      const bak = `${statePath}.bak`;
      const bakStat = triedBackup ? null : await fsp.stat(bak).catch(() => null);
      if (bakStat) {
        triedBackup = true;
        await fsp.copyFile(bak, statePath);
        log.error(
          { statePath, movedTo: aside, backup: bak, backupTakenAt: bakStat.mtime.toISOString(), anvilError: err.message },
          '!!! EMBEDDED CHAIN STATE FILE IS CORRUPT (anvil was probably killed while writing it). It was moved aside ' +
            'and the chain is RESTORED FROM THE LAST GOOD BACKUP: blocks and transactions after the backup time are LOST. !!!',
        );
        continue;
      }
      log.error(
        { statePath, movedTo: aside, anvilError: err.message },
        '!!! EMBEDDED CHAIN STATE FILE IS CORRUPT and there is no usable backup: anvil refused to load it. It was moved ' +
          'aside and a FRESH, EMPTY chain is being started. Contracts, balances and tokens of the old chain are NOT ' +
          'available on this chain. !!!',
      );
      return await launch(setup);
    }
  }
}

/** Spawns the node and waits until it answers with the chain id; a failure is explained from its output. */
// Long: spawning the node, waiting for its answer and explaining a failure share the child process and its output.
async function launch(setup: Setup): Promise<EmbeddedChain> {
  const { port, chainId, blockTime, statePath, pidPath, rpcUrl, log, files } = setup;
  const bin = anvilBinaryPath();
  const args = [
    '--host',
    HOST,
    '--port',
    String(port),
    '--chain-id',
    String(chainId),
    '--gas-limit',
    String(EMBEDDED_BLOCK_GAS_LIMIT),
    ...(blockTime === undefined ? [] : [...(setup.mixedMining ? ['--mixed-mining'] : []), '--block-time', String(blockTime)]),
    '--state',
    statePath,
    '--state-interval',
    String(STATE_INTERVAL_S),
    '--quiet', // no banner (it lists the dev private keys), no per-block lines
    '--color',
    'never',
  ];
  const hadState = fs.existsSync(statePath);
  log.info({ bin, args, loadingState: hadState }, 'starting embedded anvil');

  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const tail: string[] = [];
  const remember = (line: string) => {
    tail.push(line);
    if (tail.length > TAIL_LINES) tail.shift();
  };
  readline.createInterface({ input: child.stdout! }).on('line', (line) => {
    remember(line);
    log.debug({ stream: 'stdout' }, line);
  });
  readline.createInterface({ input: child.stderr! }).on('line', (line) => {
    remember(line);
    log.warn({ stream: 'stderr' }, line);
  });

  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', (error) => resolve({ code: null, signal: null, error }));
  });
  if (child.pid === undefined) {
    const r = await exit;
    throw new Error(`failed to spawn anvil (${bin}): ${r.error?.message ?? 'unknown error'}`, { cause: r.error });
  }
  const pid = child.pid;
  writePidFile(pidPath, { pid, port, chainId, startedAt: new Date().toISOString() });

  let exitResult: Awaited<typeof exit> | null = null;
  void exit.then((r) => {
    exitResult = r;
  });
  const answered = await waitForChainId(rpcUrl, READY_TIMEOUT_MS, exit);

  if (exitResult === null && answered === chainId) {
    // anvil has just loaded chain.json, so it is known good: back it up before anvil's first dump.
    if (hadState) await backupState(statePath, log, true);
    const chain = new ChildChain(rpcUrl, child, files, log, () => [...tail]);
    setup.runsAtNice(pid);
    log.info({ anvilPid: pid, rpcUrl, chainId }, 'embedded anvil is ready');
    return chain;
  }

  // Failure: make sure the child is gone, then explain.
  if (exitResult === null) {
    child.kill('SIGKILL');
    await exit;
  }
  const r = await exit;
  // let the readline interfaces drain the last output lines
  await new Promise<void>((resolve) => setImmediate(resolve));
  removePidFile(pidPath, pid);
  const output = tail.join('\n');
  if (answered !== null && answered !== chainId) {
    throw new Error(`anvil on ${rpcUrl} answered eth_chainId ${answered}, expected ${chainId}`);
  }
  if (exitResult === null) {
    throw new Error(`anvil (pid ${pid}) did not answer eth_chainId on ${rpcUrl} within ${READY_TIMEOUT_MS / 1000} s; killed it.\n${output}`);
  }
  if (/address already in use|os error 98|EADDRINUSE/i.test(output)) throw portInUseError(port, setup.dataDir);
  if (hadState && /--state <PATH>|failed to (parse|load|deserialize)[^\n]*(state|json)/i.test(output)) {
    throw new CorruptStateError(output);
  }
  throw new Error(
    `anvil exited during start-up (code ${r.code ?? 'null'}, signal ${r.signal ?? 'none'})` +
      (r.error ? `: ${r.error.message}` : '') +
      (output ? `. Last output:\n${output}` : ''),
  );
}
