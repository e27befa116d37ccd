// A running embedded chain, supervised: ChildChain is the anvil this process spawned (its exit is an
// event), AdoptedChain one an earlier run left behind (not our child: its pid is polled). Both back the
// state file up every minute, SIGINT their node when this process exits, and stop it with SIGINT
// (anvil saves its state) before SIGKILL.
import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import { errCode, isAlive, pollUntilDead } from './processes.js';
import { removePidFile } from './pid-lock.js';
import { checkStateSaved, startBackupLoop } from './state.js';

export interface EmbeddedChain {
  rpcUrl: string;
  pid: number;
  /** SIGINT, wait for exit (state saved), SIGKILL after 15 s; removes the pidfile. Idempotent. */
  stop(): Promise<void>;
  /** Called when the node exits without stop() having been called. */
  onExit(cb: (code: number | null, signal: string | null) => void): void;
}

const STOP_TIMEOUT_MS = 15_000;
const KILL_GRACE_MS = 5_000;
const ADOPTED_WATCH_MS = 1_000;

type ExitCb = (code: number | null, signal: string | null) => void;

/**
 * When this process last received SIGINT or SIGTERM. A Ctrl-C in a terminal reaches the whole process
 * group, anvil included: it saves its state and exits a moment before this process's shutdown comes to
 * stop it. That exit is expected, not an error. Only watched where the process already handles the
 * signal (a listener of ours must not take away its default of ending the process).
 */
let interruptedAt = -Infinity;
const watchedSignals = new Set<string>();
function watchInterrupts(): void {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    if (watchedSignals.has(sig) || process.listenerCount(sig) === 0) continue;
    watchedSignals.add(sig);
    process.prependListener(sig, noteInterrupt);
  }
}
/** This process received SIGINT or SIGTERM now (the listener above; tests call it to stand for the signal). */
export function noteInterrupt(): void {
  interruptedAt = Date.now();
}
/** Within this of our own SIGINT/SIGTERM, anvil's exit is the same Ctrl-C (or stop) reaching it. */
const INTERRUPT_WINDOW_MS = 10_000;
/** How long an exit nobody asked for waits for the signal that may have caused it, before it is an error. */
const EXIT_VERDICT_MS = 1_000;

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

/** SIGINT, wait up to STOP_TIMEOUT_MS, then SIGKILL. For processes that are not our child. */
export async function terminatePid(pid: number, log: Logger): Promise<void> {
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

export class ChildChain implements EmbeddedChain {
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
    /** How long an exit nobody asked for waits for its signal (a test's shorter moment). */
    private readonly exitVerdictMs = EXIT_VERDICT_MS,
  ) {
    this.pid = child.pid!;
    watchInterrupts();
    this.exited = new Promise<void>((resolve) => {
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        this.exitInfo = { code, signal };
        exitHookPids.delete(this.pid);
        this.stopBackups();
        resolve();
        if (this.stopping) return;
        removePidFile(this.files.pidPath, this.pid);
        const exitedAt = Date.now();
        const expected = () => this.stopping !== null || interruptedAt > exitedAt - INTERRUPT_WINDOW_MS;
        const judge = () => {
          if (expected()) {
            this.log.info({ anvilPid: this.pid, code, signal }, 'embedded anvil stopped with this process (the same signal reached it)');
            return;
          }
          this.log.error({ anvilPid: this.pid, code, signal, lastOutput: this.stderrTail() }, 'embedded anvil exited unexpectedly');
          for (const cb of this.listeners) {
            try {
              cb(code, signal);
            } catch (err) {
              this.log.error({ err }, 'anvil onExit callback threw');
            }
          }
        };
        // The group's Ctrl-C reaches anvil and this process together, and on a busy machine the news of
        // anvil's exit can be handled before the signal that caused it: the verdict waits a moment.
        if (expected()) judge();
        else setTimeout(judge, this.exitVerdictMs);
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
        this.log.error(
          { anvilPid: this.pid },
          `anvil did not exit within ${STOP_TIMEOUT_MS / 1000} s of SIGINT; sending SIGKILL (state since the last periodic dump is lost)`,
        );
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
export class AdoptedChain implements EmbeddedChain {
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
