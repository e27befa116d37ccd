// Printed once, when the operator token is generated on the first start: where the console is and
// where its sign-in token is kept. The token itself is never printed (stderr is often collected with
// the logs); not printed when LOG_LEVEL=silent.
export function printConsoleWelcome(publicUrl: string, file: string): void {
  process.stderr.write(`
================================================================================
 Developer console   ${publicUrl}/console
 Operator token      in ${file} (private: 0600), e.g.  cat ${file}
                     (set OPERATOR_TOKEN to choose your own)
================================================================================
`);
}
