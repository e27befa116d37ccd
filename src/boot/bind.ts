// Whether HOST:PORT can be served, said in the operator's terms: the setting to change and why.
import net from 'node:net';
import { mintworksOnPort } from './data-dir-lock.js';

/**
 * Fails fast, naming the setting, when HOST:PORT cannot be bound: before anything is created, so a
 * start that cannot serve leaves no Demo App or demo.env behind.
 */
export async function assertBindable(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err) => void bindErrorNamingMintworks(err as NodeJS.ErrnoException, host, port).then(reject));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** bindError, saying which Mintworks holds the port when it is one of this machine. */
async function bindErrorNamingMintworks(err: NodeJS.ErrnoException, host: string, port: number): Promise<Error> {
  const other = err.code === 'EADDRINUSE' ? await mintworksOnPort(port).catch(() => null) : null;
  if (other)
    return new Error(
      `PORT ${port} is already in use on ${host} by another Mintworks (pid ${other.pid}, DATA_DIR ${other.dataDir}): stop it or set PORT to a free port (and, for another installation, a DATA_DIR of its own)`,
    );
  return bindError(err, host, port);
}

export function bindError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  if (err.code === 'EADDRINUSE')
    return new Error(`PORT ${port} is already in use on ${host} (another Mintworks, or another program): stop it or set PORT to a free port`);
  if (err.code === 'EACCES') return new Error(`PORT ${port} needs privileges on ${host}: use a port above 1023 (and a reverse proxy for 80/443)`);
  if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN')
    return new Error(`HOST ${host} is not an address of this machine (${err.code}): use 127.0.0.1, 0.0.0.0 or one of its addresses`);
  return new Error(`cannot listen on HOST ${host} PORT ${port}: ${err.message}`);
}
