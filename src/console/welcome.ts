// Printed once, when the operator token is generated on the first start: where the console is and the
// token to sign in with. Straight to stderr like the demo App's banner, never through the logs (which
// may be shipped elsewhere); not printed when LOG_LEVEL=silent.
export function printConsoleWelcome(publicUrl: string, token: string, file: string): void {
  process.stderr.write(`
================================================================================
 Developer console   ${publicUrl}/console
 Operator token      ${token}
                     (kept in ${file}; set OPERATOR_TOKEN to choose your own)
================================================================================
`);
}
