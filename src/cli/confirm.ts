// Asking the operator before an act that reaches beyond this installation (on chain, say). Only a
// terminal can answer: without one (a script, CI, stdin closed) the act is refused unless the command
// was given --yes, so nothing is done on a guess.
import readline from 'node:readline/promises';
import { UsageError } from './args.js';

export async function confirm(question: string): Promise<void> {
  if (!process.stdin.isTTY) {
    throw new UsageError(`${question} No terminal to ask on (stdin is not a TTY): nothing done. Run it again with --yes to confirm.`);
  }
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = (await rl.question(`${question} [y/N] `)).trim().toLowerCase();
    if (answer !== 'y' && answer !== 'yes') throw new UsageError('Not confirmed: nothing done.');
  } finally {
    rl.close();
  }
}
