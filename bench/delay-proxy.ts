// A TCP proxy that holds every chunk for a while in each direction: a database across a network (a
// managed PostgreSQL a millisecond or two away) on one machine. What it measures is how the service
// copes with round trips that take time, not the network itself: a chunk waits at least `delay` ms
// (a timer's granularity adds about a millisecond), in order.
//   node --import tsx bench/delay-proxy.ts 6543 5432 1 &
//   TEST_PG_URL=postgres://postgres@127.0.0.1:6543 CPU_WORKERS=false CPU_ROUTES=post BENCH_DB=postgres \
//     node --import tsx bench/cpu.ts
import net from 'node:net';

const [listenPort, targetPort, delayMs] = process.argv.slice(2).map(Number);
if (!listenPort || !targetPort || !(delayMs >= 0)) {
  console.error('usage: bench/delay-proxy.ts <listen port> <target port> <delay ms each way>');
  process.exit(2);
}

net
  .createServer((client) => {
    const server = net.connect(targetPort, '127.0.0.1');
    const forward = (from: net.Socket, to: net.Socket) => from.on('data', (chunk) => setTimeout(() => to.write(chunk), delayMs));
    forward(client, server);
    forward(server, client);
    const end = () => {
      client.destroy();
      server.destroy();
    };
    for (const s of [client, server]) s.on('error', end).on('close', end);
  })
  .listen(listenPort, '127.0.0.1', () => console.log(`127.0.0.1:${listenPort} -> 127.0.0.1:${targetPort}, ${delayMs} ms each way`));
