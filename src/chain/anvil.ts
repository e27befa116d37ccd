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
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import type { Logger } from 'pino';
import { delay, isAlive, pollUntilDead } from '../util/processes.js';

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
}

export interface EmbeddedChain {
  rpcUrl: string;
  pid: number;
  /** SIGINT, wait for exit (state saved), SIGKILL after 15 s; removes the pidfile. Idempotent. */
  stop(): Promise<void>;
  /** Called when the node exits without stop() having been called. */
  onExit(cb: (code: number | null, signal: string | null) => void): void;
}

const HOST = '127.0.0.1';
const STATE_FILE = 'chain.json';
const PID_FILE = 'anvil.pid';
const LOCK_FILE = 'anvil.lock';
const STATE_INTERVAL_S = 5;
const READY_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 15_000;
const KILL_GRACE_MS = 5_000;
const ADOPT_PROBE_MS = 5_000;
const LOCK_TIMEOUT_MS = 60_000;
const ADOPTED_WATCH_MS = 1_000;
const BACKUP_INTERVAL_MS = 60_000;
const TAIL_LINES = 20;

/**
 * The npm package that ships anvil for a platform and CPU (as Node names them), or null where none
 * is published. All four are optional dependencies, so the lockfile records each and npm installs
 * only the one that fits the machine.
 */
export const ANVIL_PACKAGES: Readonly<Record<string, string>> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
};

export function anvilPackageFor(platform: string, arch: string): string | null {
  return ANVIL_PACKAGES[`${platform}-${arch}`] ?? null;
}

/** Absolute path of the anvil binary shipped by the package of this platform (anvilPackageFor). */
export function anvilBinaryPath(platform: string = process.platform, arch: string = process.arch): string {
  const pkg = anvilPackageFor(platform, arch);
  if (!pkg) {
    throw new Error(
      `no embedded chain for ${platform}/${arch}: anvil is packaged for linux and darwin on x64 and arm64. ` +
        `Set CHAIN_RPC_URL to a JSON-RPC endpoint of a chain instead.`,
    );
  }
  const require = createRequire(import.meta.url);
  let pkgJson: string;
  try {
    pkgJson = require.resolve(`${pkg}/package.json`);
  } catch (err) {
    throw new Error(
      `anvil binary not found: npm package ${pkg} is not installed (an optional dependency: was the ` +
        `install run with --omit=optional, or on another machine?). Run \`npm ci\` on this machine, ` +
        `or set CHAIN_RPC_URL to use an external chain instead of the embedded one.`,
      { cause: err },
    );
  }
  const bin = path.join(path.dirname(pkgJson), 'bin', 'anvil');
  try {
    fs.accessSync(bin, fs.constants.X_OK);
  } catch (err) {
    throw new Error(`anvil binary of package ${pkg} is missing or not executable: ${bin}`, { cause: err });
  }
  return bin;
}

// ---------------------------------------------------------------------------
// small helpers


function errCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

/** argv of a process, or null if it cannot be read. */
function readCmdline(pid: number): string[] | null {
  try {
    const raw = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const argv = raw.split('\0');
    if (argv.length > 0 && argv[argv.length - 1] === '') argv.pop();
    return argv.length > 0 ? argv : null;
  } catch (err) {
    if (process.platform === 'linux') return null;
    void err;
  }
  try {
    const out = execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    return out ? out.split(/\s+/) : null;
  } catch {
    return null;
  }
}

function isAnvilArgv(argv: string[]): boolean {
  const exe = path.basename(argv[0] ?? '');
  return exe === 'anvil' || exe === 'anvil.exe';
}

function argValue(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  if (i >= 0) return argv[i + 1];
  const inline = argv.find((a) => a.startsWith(`${flag}=`));
  return inline?.slice(flag.length + 1);
}

/** Linux only: pids of anvil processes whose `--state` is `statePath`. */
function findAnvilsOnState(statePath: string): number[] {
  if (process.platform !== 'linux') return [];
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  for (const name of entries) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const argv = readCmdline(pid);
    if (!argv || !isAnvilArgv(argv)) continue;
    const st = argValue(argv, '--state');
    if (st && path.resolve(st) === statePath && isAlive(pid)) found.push(pid);
  }
  return found;
}

/** eth_chainId of the node at `url`, or null if it does not answer properly. */
async function rpcChainId(url: string, timeoutMs: number): Promise<number | null> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return null;
    const body = (await res.json()) as { result?: unknown };
    if (typeof body.result !== 'string' || !/^0x[0-9a-f]+$/i.test(body.result)) return null;
    return Number.parseInt(body.result, 16);
  } catch {
    return null;
  }
}

/** Polls eth_chainId with a short backoff until it answers or `timeoutMs` elapses. */
async function waitForChainId(url: string, timeoutMs: number, abort?: Promise<unknown>): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  let aborted = false;
  void abort?.then(() => {
    aborted = true;
  });
  let backoff = 25;
  while (!aborted) {
    const left = deadline - Date.now();
    if (left <= 0) return null;
    const id = await rpcChainId(url, Math.min(1_000, Math.max(left, 50)));
    if (id !== null) return id;
    if (aborted || Date.now() + backoff >= deadline) return aborted ? null : rpcChainId(url, 1_000);
    await Promise.race([delay(backoff), abort ?? new Promise(() => {})]);
    backoff = Math.min(backoff * 2, 250);
  }
  return null;
}

/** True if we can bind HOST:port right now (i.e. anvil will be able to). */
async function portIsFree(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', (err) => {
      if (errCode(err) === 'EADDRINUSE') resolve(false);
      else reject(new Error(`ANVIL_PORT ${port} cannot be used on ${HOST}: ${(err as Error).message}`, { cause: err }));
    });
    srv.listen({ port, host: HOST, exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

function portInUseError(port: number, dataDir: string): Error {
  return new Error(
    `ANVIL_PORT ${port} is already in use on ${HOST} by another process (not the embedded anvil of ${dataDir}). ` +
      `Stop that process or set ANVIL_PORT to a free port.`,
  );
}

/** SIGINT, wait up to STOP_TIMEOUT_MS, then SIGKILL. For processes that are not our child. */
async function terminatePid(pid: number, log: Logger): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch (err) {
    if (errCode(err) === 'ESRCH') return;
    throw err;
  }
  if (await pollUntilDead(pid, STOP_TIMEOUT_MS)) return;
  log.error({ anvilPid: pid }, `anvil did not exit within ${STOP_TIMEOUT_MS / 1000} s of SIGINT; sending SIGKILL (state since the last periodic dump is lost)`);
  try {
    process.kill(pid, 'SIGKILL');
  } catch (err) {
    if (errCode(err) === 'ESRCH') return;
    throw err;
  }
  if (!(await pollUntilDead(pid, KILL_GRACE_MS))) throw new Error(`anvil pid ${pid} survived SIGKILL`);
}

interface PidFile {
  pid: number;
  port: number;
  chainId: number;
  startedAt: string;
}

function readPidFile(file: string, log: Logger): PidFile | null {
  let raw: string;
  try {
    raw = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if (errCode(err) === 'ENOENT') return null;
    throw err;
  }
  try {
    const v = JSON.parse(raw) as Partial<PidFile>;
    if (typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0) {
      return { pid: v.pid, port: Number(v.port), chainId: Number(v.chainId), startedAt: String(v.startedAt) };
    }
  } catch {
    /* fall through */
  }
  log.warn({ file }, 'ignoring unreadable anvil pidfile');
  return null;
}

function writePidFile(file: string, content: PidFile): void {
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, JSON.stringify(content) + '\n');
  fs.renameSync(tmp, file);
}

/** Removes the pidfile if it (still) names `pid` (or unconditionally when pid is undefined). */
function removePidFile(file: string, pid?: number): void {
  try {
    if (pid !== undefined) {
      const raw = fs.readFileSync(file, 'utf8');
      const cur = (JSON.parse(raw) as Partial<PidFile>).pid;
      if (cur !== pid) return;
    }
    fs.unlinkSync(file);
  } catch {
    /* already gone / unreadable: nothing to do */
  }
}

/**
 * Cross-process (and in-process) exclusive lock around start-up on one data
 * dir. The lock file holds the owner's pid; a lock whose owner is dead is stale.
 */
async function acquireLock(file: string, log: Logger): Promise<() => void> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  let warned = false;
  for (;;) {
    try {
      const fd = fs.openSync(file, 'wx');
      fs.writeSync(fd, String(process.pid));
      fs.closeSync(fd);
      return () => {
        try {
          fs.unlinkSync(file);
        } catch {
          /* ignore */
        }
      };
    } catch (err) {
      if (errCode(err) !== 'EEXIST') throw err;
    }
    let owner = NaN;
    let ageMs = 0;
    try {
      owner = Number.parseInt(fs.readFileSync(file, 'utf8'), 10);
      ageMs = Date.now() - fs.statSync(file).mtimeMs;
    } catch {
      continue; // vanished between open and read: retry immediately
    }
    // dead owner, an owner that never wrote its pid, or a lock older than any start-up can take (pid reused)
    const stale = (Number.isInteger(owner) && owner > 0 ? !isAlive(owner) : ageMs > 2_000) || ageMs > LOCK_TIMEOUT_MS;
    if (stale) {
      log.warn({ file, owner }, 'removing stale anvil start-up lock');
      try {
        fs.unlinkSync(file);
      } catch {
        /* someone else removed it */
      }
      continue;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out waiting for ${file} (held by pid ${owner}): another start of the embedded chain is in progress`);
    }
    if (!warned) {
      log.info({ file, owner }, 'another start of the embedded chain is in progress on this data dir; waiting');
      warned = true;
    }
    await delay(50);
  }
}

function timestampForFilename(d = new Date()): string {
  return d.toISOString().replace(/[:.]/g, '-');
}

// ---------------------------------------------------------------------------
// running chains

type ExitCb = (code: number | null, signal: string | null) => void;

/** pids we are responsible for; SIGINT them if this process exits without stop(). */
const exitHookPids = new Set<number>();
let exitHookInstalled = false;
function registerExitHook(pid: number): void {
  exitHookPids.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const p of exitHookPids) {
      try {
        process.kill(p, 'SIGINT'); // anvil saves its state and exits on its own
      } catch {
        /* already gone */
      }
    }
  });
}

function checkStateSaved(statePath: string, since: number, log: Logger): void {
  try {
    const st = fs.statSync(statePath);
    if (st.mtimeMs + 1_000 < since) {
      log.error({ statePath, mtime: new Date(st.mtimeMs).toISOString() }, 'anvil exited but did not rewrite its state file on shutdown');
    }
  } catch {
    log.error({ statePath }, 'anvil exited but its state file does not exist: chain state was NOT saved');
  }
}

/**
 * Copies chain.json to chain.json.bak if it is complete: not modified in the last
 * second (unless `justLoaded`: anvil has just parsed it and will not write it before
 * its first --state-interval tick), unchanged while we copied it, and looks like a
 * whole JSON object. Returns true if a new backup was written.
 */
async function backupState(statePath: string, log: Logger, justLoaded = false): Promise<boolean> {
  const bak = `${statePath}.bak`;
  const tmp = `${bak}.tmp`;
  try {
    const before = await fsp.stat(statePath);
    if (before.size < 2 || (!justLoaded && Date.now() - before.mtimeMs < 1_000)) return false; // being (re)written
    const old = await fsp.stat(bak).catch(() => null);
    if (old && old.size === before.size && Math.abs(old.mtimeMs - before.mtimeMs) < 1) return false; // up to date
    await fsp.copyFile(statePath, tmp);
    const after = await fsp.stat(statePath);
    const copy = await fsp.stat(tmp);
    if (after.mtimeMs !== before.mtimeMs || after.size !== before.size || copy.size !== before.size || !(await looksLikeJsonObject(tmp, copy.size))) {
      await fsp.rm(tmp, { force: true });
      return false;
    }
    await fsp.utimes(tmp, before.atime, before.mtime); // bak mtime = time of the anvil dump it copies
    await fsp.rename(tmp, bak);
    return true;
  } catch (err) {
    if (errCode(err) !== 'ENOENT') log.warn({ err, statePath }, 'could not back up the chain state file');
    await fsp.rm(tmp, { force: true }).catch(() => {});
    return false;
  }
}

async function looksLikeJsonObject(file: string, size: number): Promise<boolean> {
  const fh = await fsp.open(file, 'r');
  try {
    const n = Math.min(size, 64);
    const head = Buffer.alloc(n);
    const tail = Buffer.alloc(n);
    await fh.read(head, 0, n, 0);
    await fh.read(tail, 0, n, size - n);
    return head.toString('latin1').trimStart().startsWith('{') && tail.toString('latin1').trimEnd().endsWith('}');
  } finally {
    await fh.close();
  }
}

/** Periodic backupState(); returns a function that stops it. */
function startBackupLoop(statePath: string, log: Logger): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void backupState(statePath, log).finally(() => {
      running = false;
    });
  }, BACKUP_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

class ChildChain implements EmbeddedChain {
  readonly pid: number;
  private stopping: Promise<void> | null = null;
  private exitInfo: { code: number | null; signal: string | null } | null = null;
  private readonly exited: Promise<void>;
  private readonly listeners: ExitCb[] = [];
  private readonly stopBackups: () => void;

  constructor(
    readonly rpcUrl: string,
    private readonly child: ChildProcess,
    private readonly files: { pidPath: string; statePath: string },
    private readonly log: Logger,
    private readonly stderrTail: () => string[],
  ) {
    this.pid = child.pid!;
    this.exited = new Promise<void>((resolve) => {
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        this.exitInfo = { code, signal };
        exitHookPids.delete(this.pid);
        this.stopBackups();
        resolve();
        if (this.stopping) return;
        removePidFile(this.files.pidPath, this.pid);
        this.log.error(
          { anvilPid: this.pid, code, signal, lastOutput: this.stderrTail() },
          'embedded anvil exited unexpectedly',
        );
        for (const cb of this.listeners) {
          try {
            cb(code, signal);
          } catch (err) {
            this.log.error({ err }, 'anvil onExit callback threw');
          }
        }
      };
      if (child.exitCode !== null || child.signalCode !== null) onExit(child.exitCode, child.signalCode);
      else child.once('exit', onExit);
    });
    registerExitHook(this.pid);
    this.stopBackups = startBackupLoop(files.statePath, log);
  }

  onExit(cb: ExitCb): void {
    this.listeners.push(cb);
  }

  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    const since = Date.now();
    this.stopBackups();
    if (!this.exitInfo) {
      this.log.info({ anvilPid: this.pid }, 'stopping embedded anvil (SIGINT, state will be saved)');
      this.child.kill('SIGINT');
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        this.exited.then(() => false),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), STOP_TIMEOUT_MS);
        }),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        this.log.error({ anvilPid: this.pid }, `anvil did not exit within ${STOP_TIMEOUT_MS / 1000} s of SIGINT; sending SIGKILL (state since the last periodic dump is lost)`);
        this.child.kill('SIGKILL');
        await this.exited;
      } else {
        checkStateSaved(this.files.statePath, since, this.log);
      }
      const info = this.exitInfo as { code: number | null; signal: string | null } | null;
      this.log.info({ anvilPid: this.pid, code: info?.code, signal: info?.signal }, 'embedded anvil stopped');
    }
    exitHookPids.delete(this.pid);
    removePidFile(this.files.pidPath, this.pid);
  }
}

/** A node started by an earlier service instance (not our child): supervised by polling its pid. */
class AdoptedChain implements EmbeddedChain {
  private stopping: Promise<void> | null = null;
  private readonly listeners: ExitCb[] = [];
  private readonly watch: NodeJS.Timeout;
  private readonly stopBackups: () => void;

  constructor(
    readonly rpcUrl: string,
    readonly pid: number,
    private readonly files: { pidPath: string; statePath: string },
    private readonly log: Logger,
  ) {
    registerExitHook(pid);
    this.stopBackups = startBackupLoop(files.statePath, log);
    this.watch = setInterval(() => {
      if (this.stopping || isAlive(this.pid)) return;
      clearInterval(this.watch);
      this.stopBackups();
      exitHookPids.delete(this.pid);
      removePidFile(this.files.pidPath, this.pid);
      this.log.error({ anvilPid: this.pid }, 'adopted embedded anvil exited unexpectedly');
      for (const cb of this.listeners) {
        try {
          cb(null, null); // exit status of a non-child is not observable
        } catch (err) {
          this.log.error({ err }, 'anvil onExit callback threw');
        }
      }
    }, ADOPTED_WATCH_MS);
    this.watch.unref();
  }

  onExit(cb: ExitCb): void {
    this.listeners.push(cb);
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearInterval(this.watch);
      this.stopBackups();
      const since = Date.now();
      if (isAlive(this.pid)) {
        this.log.info({ anvilPid: this.pid }, 'stopping adopted embedded anvil (SIGINT, state will be saved)');
        await terminatePid(this.pid, this.log);
        checkStateSaved(this.files.statePath, since, this.log);
      }
      exitHookPids.delete(this.pid);
      removePidFile(this.files.pidPath, this.pid);
    })();
    return this.stopping;
  }
}

class CorruptStateError extends Error {}

// ---------------------------------------------------------------------------

export async function startEmbeddedChain(opts: EmbeddedChainOptions): Promise<EmbeddedChain> {
  const { port, chainId } = opts;
  const blockTime = opts.blockTime;
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`ANVIL_PORT must be a TCP port, got ${port}`);
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new Error(`invalid chain id ${chainId}`);
  if (blockTime !== undefined && !(blockTime > 0)) throw new Error(`blockTime must be > 0 seconds, got ${blockTime}`);

  const dataDir = path.resolve(opts.dataDir);
  const statePath = path.join(dataDir, STATE_FILE);
  const pidPath = path.join(dataDir, PID_FILE);
  const files = { pidPath, statePath };
  const rpcUrl = `http://${HOST}:${port}`;
  const log = opts.logger;
  await fsp.mkdir(dataDir, { recursive: true });

  const release = await acquireLock(path.join(dataDir, LOCK_FILE), log);
  try {
    // 1. Reconcile with whatever a previous run left behind.
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
        log.warn({ anvilPid: pid, port, expectedChainId: chainId, chainId: itsChainId }, 'running anvil on this data dir answers with the wrong chain id (or not at all); restarting it');
      } else {
        log.warn({ anvilPid: pid, port: itsPort, expectedPort: port }, 'running anvil on this data dir uses another port; restarting it');
      }
      await terminatePid(pid, log);
    }

    if (adoptPid !== null) {
      if (pf?.pid !== adoptPid) {
        writePidFile(pidPath, { pid: adoptPid, port, chainId, startedAt: new Date().toISOString() });
      }
      log.info({ anvilPid: adoptPid, rpcUrl }, 'adopted already running embedded anvil');
      return new AdoptedChain(rpcUrl, adoptPid, files, log);
    }
    removePidFile(pidPath);

    // 2. Start a fresh node.
    if (!(await portIsFree(port))) throw portInUseError(port, dataDir);
    await fsp.rm(`${statePath}.bak.tmp`, { force: true });
    let triedBackup = false;
    for (;;) {
      try {
        return await launch();
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
        return await launch();
      }
    }
  } finally {
    release();
  }

  async function launch(): Promise<EmbeddedChain> {
    const bin = anvilBinaryPath();
    const args = [
      '--host', HOST,
      '--port', String(port),
      '--chain-id', String(chainId),
      ...(blockTime === undefined ? [] : ['--mixed-mining', '--block-time', String(blockTime)]),
      '--state', statePath,
      '--state-interval', String(STATE_INTERVAL_S),
      '--quiet', // no banner (it lists the dev private keys), no per-block lines
      '--color', 'never',
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
    if (/address already in use|os error 98|EADDRINUSE/i.test(output)) throw portInUseError(port, dataDir);
    if (hadState && /--state <PATH>|failed to (parse|load|deserialize)[^\n]*(state|json)/i.test(output)) {
      throw new CorruptStateError(output);
    }
    throw new Error(
      `anvil exited during start-up (code ${r.code ?? 'null'}, signal ${r.signal ?? 'none'})` +
        (r.error ? `: ${r.error.message}` : '') +
        (output ? `. Last output:\n${output}` : ''),
    );
  }
}

/**
 * A complete copy of the embedded chain's state file at `dest`, taken while anvil may be rewriting it
 * in place (every STATE_INTERVAL_S): a copy counts only if the file was not changed while it was read
 * and parses as JSON. Tries for `timeoutMs`; false if there is no state file and no running chain.
 */
export async function copyChainState(dataDir: string, dest: string, timeoutMs = 30_000): Promise<boolean> {
  const statePath = path.join(path.resolve(dataDir), STATE_FILE);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const before = await fsp.stat(statePath).catch(() => null);
    // A chain started moments ago writes its first state within STATE_INTERVAL_S: wait for it.
    if (!before && runningAnvilPid(dataDir) === null) return false;
    if (!before) {
      if (Date.now() > deadline) throw new Error(`the running embedded chain wrote no ${statePath} within ${timeoutMs / 1000} s`);
      await delay(200);
      continue;
    }
    if (before.size > 1) {
      await fsp.copyFile(statePath, dest);
      const after = await fsp.stat(statePath);
      if (after.mtimeMs === before.mtimeMs && after.size === before.size) {
        try {
          JSON.parse(await fsp.readFile(dest, 'utf8'));
          return true;
        } catch {
          /* caught mid-write: try again */
        }
      }
    }
    if (Date.now() > deadline) throw new Error(`could not take a complete copy of ${statePath} within ${timeoutMs / 1000} s (it kept changing)`);
    await delay(200);
  }
}

/** The pid of the embedded anvil recorded in DATA_DIR, if that process is alive. */
export function runningAnvilPid(dataDir: string): number | null {
  try {
    const v = JSON.parse(fs.readFileSync(path.join(path.resolve(dataDir), PID_FILE), 'utf8')) as { pid?: unknown };
    return typeof v.pid === 'number' && isAlive(v.pid) ? v.pid : null;
  } catch {
    return null;
  }
}
