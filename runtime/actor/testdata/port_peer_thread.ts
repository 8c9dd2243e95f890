/**
 * A slot-thread stand-in for `port_transport_test.ts`: receives a port and a
 * subject, connects a {@linkcode PortTransport} over NATS to it, and echoes
 * each message on the subject to `<subject>.echo`, then says `ready`.
 *
 * @module
 */

import { NatsTransport } from "../nats_transport.ts";
import { PortTransport } from "../port_transport.ts";

interface Setup {
  readonly port: MessagePort;
  readonly subject: string;
  readonly nats: string;
}

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<Setup>) => void) | null;
  postMessage(m: unknown): void;
};
scope.onmessage = async (e) => {
  const { port, subject, nats } = e.data;
  const remote = await NatsTransport.connect({ servers: nats });
  const transport = new PortTransport({ remote, ownsRemote: true, name: "thread" });
  transport.connectPeer("main", port);
  transport.subscribe(subject, (m) => transport.publish(`${subject}.echo`, m.data));
  await transport.flush();
  scope.postMessage("ready");
};
