/**
 * Simulated hosts for multi-host tests and benchmarks: Linux network
 * namespaces on one machine, each a "host" with its own network stack,
 * joined by a bridge on a private subnet, with a nats-server (JetStream on)
 * on the machine's side of the bridge.
 *
 * ```ts ignore
 * import { withSimulatedHosts } from "./_netns.ts";
 *
 * await withSimulatedHosts({ hosts: 4 }, async (lab) => {
 *   // A worker on host 2, connecting to NATS over its own link.
 *   const w = lab.deno(2, "w2", ["run", "-A", "cli.ts", "worker", "--nats", lab.natsUrl]);
 *   await w.waitFor(/weir worker .*slots/);
 *   await lab.cutLink(2); // host 2 drops off the network, its processes keep running
 *   await lab.restoreLink(2);
 * }); // every namespace, link, process and temporary directory is gone
 * ```
 *
 * ## Design
 *
 * - **Layout.** A bridge `weirbr<x>` with address `10.231.<x>.1/24` on the
 *   machine's side (the "network"), and per host `i` a namespace
 *   `weir-<random>-h<i>` with loopback up and an interface `eth0` at
 *   `10.231.<x>.<10 + i>/24`, the end of a veth pair whose other end,
 *   `weirv<x>h<i>`, is a port of the bridge. Hosts reach each other and the
 *   bridge address on one segment, without routing or forwarding; nothing
 *   routes them to the outside.
 * - **NATS** listens on the bridge address only (`startNatsServer({ host })`
 *   of `_nats_server.ts`, its own temporary store), so processes on the
 *   machine's side and in every namespace connect to the same URL,
 *   {@linkcode SimulatedHosts.natsUrl}; a host whose link is cut cannot.
 * - **Processes** in a namespace are started with `ip netns exec <ns> deno
 *   …` ({@linkcode SimulatedHosts.deno}). `ip netns exec` execs in place, so
 *   the child's pid is deno's (CPU accounting and signals work as for a
 *   direct child). Namespaces share the machine's file system, so a path is
 *   the same on every host (the job module, Deno's cache); give each host a
 *   directory of its own for what should be host-local
 *   ({@linkcode SimulatedHosts.hostDirectory}).
 * - **Cutting a link** sets the bridge's end of the host's veth down: the
 *   host's `eth0` loses carrier and every packet to or from it is dropped,
 *   as when a cable is pulled. Its processes keep running, and TCP
 *   connections survive a short cut (their retransmits resume once the link
 *   is up again), so a partition and its healing are both exercised.
 *
 * ## Invariants
 *
 * - **Unique names.** The subnet's third byte `x` is drawn at random among
 *   those no address or route of the machine overlaps, and `ip link add
 *   weirbr<x>` is the lock on it: a concurrent run that drew the same `x`
 *   fails to create the bridge and draws again. Namespaces carry a random
 *   suffix.
 * - **Cleanup.** {@linkcode SimulatedHosts.close} (called by
 *   {@linkcode withSimulatedHosts} however `fn` ends, and on SIGINT/SIGTERM)
 *   stops the processes it started, kills whatever else still runs in the
 *   namespaces, stops NATS, deletes the veth pairs, the namespaces, the
 *   bridge and the temporary directory, and reports every step
 *   that failed. A run killed with SIGKILL cannot clean up: the bridge's
 *   alias names its owner's pid, and the next {@linkcode SimulatedHosts.create}
 *   removes the namespaces, links, bridges and temporary directories of
 *   owners that are gone, and their nats-server with its store (when the
 *   nats-server died with its owner, as when the whole process group is
 *   killed, its small temporary `weir-nats-…` directory stays).
 *
 * Needs root (or `CAP_NET_ADMIN` and `CAP_SYS_ADMIN`) and iproute2's `ip`;
 * {@linkcode netnsUnavailable} says why a machine cannot run it. Running
 * `ip` and choosing a free subnet are `_netns_ip.ts`.
 *
 * @module
 */

import { Proc } from "./_cluster.ts";
import { type NatsServerHandle, startNatsServer } from "./_nats_server.ts";
import {
  findIp,
  freeSubnetBytes,
  ip,
  IpCommandError,
  netnsUnavailable,
  SUBNET_PREFIX,
  usedNetworks,
} from "./_netns_ip.ts";

export {
  freeSubnetBytes,
  IpCommandError,
  type Ipv4Network,
  ipv4Overlaps,
  netnsUnavailable,
  parseIpv4Network,
} from "./_netns_ip.ts";

/** The most hosts one lab holds (addresses `.10` to `.73`). */
export const MAX_SIMULATED_HOSTS = 64;

/** The prefix of a lab's bridge alias, which names its owner (see the module docs). */
const ALIAS_PREFIX = "weir-netns";

/** How long a process gets to end after SIGTERM before SIGKILL, in ms. */
const STOP_GRACE_MS = 5000;

/** Whether process `pid` runs (exists and is not a zombie waiting to be reaped). */
function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

/** SIGKILLs every process in namespace `ns` (`ip netns pids`); none when it is gone. */
async function killNamespaceProcesses(ns: string): Promise<void> {
  let pids: number[];
  try {
    pids = (await ip("netns", "pids", ns)).split(/\s+/).filter((p) => p !== "").map(Number);
  } catch (error) {
    if (error instanceof IpCommandError) return; // no such namespace
    throw error;
  }
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // ended meanwhile
    }
  }
}

/**
 * Removes what labs of processes that no longer exist left behind (they were
 * killed before they could clean up): for each bridge whose alias names a
 * dead owner, its veth pairs, the processes in its namespaces, the namespaces,
 * the bridge, the lab's temporary directory and its NATS server.
 */
async function sweepAbandoned(): Promise<void> {
  const bridges = JSON.parse(await ip("-j", "link", "show", "type", "bridge")) as {
    ifname: string;
    ifalias?: string;
  }[];
  const namespaces = (JSON.parse((await ip("-j", "netns", "list")).trim() || "[]") as {
    name: string;
  }[]).map((n) => n.name);
  const links = (JSON.parse(await ip("-j", "link")) as { ifname: string }[]).map((l) => l.ifname);
  for (const b of bridges) {
    const m = new RegExp(`^${ALIAS_PREFIX} owner=(\\d+) namespaces=(\\S+) directory=(\\S+)$`)
      .exec(b.ifalias ?? "");
    if (m === null || alive(Number(m[1]))) continue;
    const x = b.ifname.slice("weirbr".length);
    for (const link of links.filter((l) => new RegExp(`^weirv${x}h\\d+$`).test(l))) {
      await ip("link", "del", link).catch(() => {});
    }
    for (const ns of namespaces.filter((n) => n.startsWith(m[2]!))) {
      await killNamespaceProcesses(ns);
      await ip("netns", "del", ns).catch(() => {});
    }
    // Before the bridge goes: once it is gone, another lab may claim its subnet and address.
    await killAbandonedNatsServer(`${SUBNET_PREFIX}.${x}.1`);
    await Deno.remove(m[3]!, { recursive: true }).catch(() => {});
    await ip("link", "del", b.ifname).catch(() => {});
  }
}

/**
 * SIGKILLs a nats-server listening on `address` (`-a <address>` on its
 * command line, as `startNatsServer({ host })` starts it) and removes its
 * temporary directory (the parent of its `-sd` store, a `weir-nats-…`
 * directory).
 */
async function killAbandonedNatsServer(address: string): Promise<void> {
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    let args: string[];
    try {
      args = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
    } catch {
      continue; // ended meanwhile
    }
    if (!args[0]?.endsWith("nats-server") || args[args.indexOf("-a") + 1] !== address) continue;
    try {
      Deno.kill(Number(entry.name), "SIGKILL");
    } catch {
      // ended meanwhile
    }
    const store = args[args.indexOf("-sd") + 1];
    const dir = store?.replace(/\/store$/, "");
    if (dir !== undefined && /\/weir-nats-[^/]+$/.test(dir)) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  }
}

/** One simulated host. */
export interface SimulatedHost {
  /** Its index, from 0. */
  readonly index: number;
  /** Its network namespace's name (`weir-<random>-h<index>`). */
  readonly namespace: string;
  /** Its IPv4 address on the lab's subnet (on its `eth0`). */
  readonly address: string;
  /** The bridge's end of its veth pair (`weirv<x>h<index>`), which {@linkcode SimulatedHosts.cutLink} sets down. */
  readonly link: string;
}

/** Options of {@linkcode SimulatedHosts.create}. */
export interface SimulatedHostsOptions {
  /** Number of hosts, 1 to {@linkcode MAX_SIMULATED_HOSTS}. */
  readonly hosts: number;
}

/** A command's end: exit code and output. */
export interface CommandOutput {
  /** Its exit code. */
  readonly code: number;
  /** What it printed on stdout. */
  readonly stdout: string;
  /** What it printed on stderr. */
  readonly stderr: string;
}

/**
 * Network namespaces on a bridge with a NATS server: see the module docs.
 * Make one with {@linkcode SimulatedHosts.create} (or use
 * {@linkcode withSimulatedHosts}) and always {@linkcode SimulatedHosts.close} it.
 */
export class SimulatedHosts {
  /** The hosts, by index. */
  readonly hosts: readonly SimulatedHost[];
  /** The bridge's name (`weirbr<x>`). */
  readonly bridge: string;
  /** The bridge's address, where the NATS server listens (`10.231.<x>.1`). */
  readonly bridgeAddress: string;
  /** The subnet (`10.231.<x>.0/24`). */
  readonly subnet: string;
  /** A temporary directory of the lab, removed by {@linkcode SimulatedHosts.close}. */
  readonly directory: string;
  #nats: NatsServerHandle | undefined;
  readonly #procs: Proc[] = [];
  readonly #down = new Set<number>();
  #closing: Promise<void> | undefined;
  readonly #onSignal: () => void;

  private constructor(
    o: { hosts: SimulatedHost[]; bridge: string; x: number; directory: string },
  ) {
    this.hosts = o.hosts;
    this.bridge = o.bridge;
    this.bridgeAddress = `${SUBNET_PREFIX}.${o.x}.1`;
    this.subnet = `${SUBNET_PREFIX}.${o.x}.0/24`;
    this.directory = o.directory;
    this.#onSignal = () => {
      console.error(`simulated hosts on ${this.bridge}: interrupted, cleaning up`);
      this.close().catch((e) => console.error(e)).finally(() => Deno.exit(130));
    };
  }

  /**
   * Builds the bridge, `options.hosts` namespaces with their links, and the
   * NATS server (JetStream on, its own temporary store) on the bridge
   * address. Removes leftovers of labs whose process is gone first. On a
   * failure, removes what it built before throwing.
   *
   * @param options How many hosts.
   * @returns The lab, with NATS accepting connections.
   * @throws {RangeError} when `hosts` is not an integer from 1 to {@linkcode MAX_SIMULATED_HOSTS}.
   * @throws {Error} saying what is missing when {@linkcode netnsUnavailable}
   *   gives a reason, when no subnet `10.231.<x>.0/24` is free, or with the
   *   failing `ip` command ({@linkcode IpCommandError}) or the NATS server's log.
   */
  static async create(options: SimulatedHostsOptions): Promise<SimulatedHosts> {
    const n = options.hosts;
    if (!Number.isInteger(n) || n < 1 || n > MAX_SIMULATED_HOSTS) {
      throw new RangeError(
        `'hosts' must be an integer from 1 to ${MAX_SIMULATED_HOSTS}: current value is ${n}`,
      );
    }
    const missing = netnsUnavailable();
    if (missing !== undefined) throw new Error(`Cannot simulate hosts: ${missing}`);
    await sweepAbandoned();
    const suffix = crypto.randomUUID().replaceAll("-", "").slice(0, 8);
    const nsPrefix = `weir-${suffix}-`;
    const directory = await Deno.makeTempDir({ prefix: "weir-netns-" });
    let claimed: { x: number; bridge: string };
    try {
      claimed = await claimSubnet(nsPrefix, directory);
    } catch (error) {
      await Deno.remove(directory, { recursive: true });
      throw error;
    }
    const { x, bridge } = claimed;
    const hosts = Array.from({ length: n }, (_, i): SimulatedHost => ({
      index: i,
      namespace: `${nsPrefix}h${i}`,
      address: `${SUBNET_PREFIX}.${x}.${10 + i}`,
      link: `weirv${x}h${i}`,
    }));
    const lab = new SimulatedHosts({ hosts, bridge, x, directory });
    Deno.addSignalListener("SIGINT", lab.#onSignal);
    Deno.addSignalListener("SIGTERM", lab.#onSignal);
    try {
      await ip("addr", "add", `${lab.bridgeAddress}/24`, "dev", bridge);
      await ip("link", "set", "dev", bridge, "up");
      for (const h of hosts) {
        await ip("netns", "add", h.namespace);
        await ip(
          "link",
          "add",
          h.link,
          "type",
          "veth",
          "peer",
          "name",
          "eth0",
          "netns",
          h.namespace,
        );
        await ip("link", "set", "dev", h.link, "master", bridge);
        await ip("link", "set", "dev", h.link, "up");
        await ip("-n", h.namespace, "link", "set", "dev", "lo", "up");
        await ip("-n", h.namespace, "addr", "add", `${h.address}/24`, "dev", "eth0");
        await ip("-n", h.namespace, "link", "set", "dev", "eth0", "up");
        await Deno.mkdir(lab.hostDirectory(h.index));
      }
      lab.#nats = await startNatsServer({ jetstream: true, host: lab.bridgeAddress });
    } catch (error) {
      await lab.close().catch((e) => console.error(`cleanup after a failed setup: ${e}`));
      throw error;
    }
    return lab;
  }

  /** The NATS server on the bridge address. */
  get nats(): NatsServerHandle {
    if (this.#nats === undefined) {
      throw new Error(`the NATS server of ${this.bridge} is not running`);
    }
    return this.#nats;
  }

  /** `nats://10.231.<x>.1:<port>`: reachable from the machine and every host whose link is up. */
  get natsUrl(): string {
    return this.nats.url;
  }

  /**
   * A directory of host `host`'s own (`<directory>/h<host>`), for what should
   * be host-local (a worker's local state).
   * @throws {RangeError} naming the hosts when there is no such host.
   */
  hostDirectory(host: number): string {
    return `${this.directory}/h${this.#host(host).index}`;
  }

  #host(host: number): SimulatedHost {
    const h = this.hosts[host];
    if (h === undefined) {
      throw new RangeError(
        `no simulated host ${host}: the hosts are 0 to ${this.hosts.length - 1}`,
      );
    }
    return h;
  }

  /**
   * Starts `deno <args…>` in host `host`'s namespace (`ip netns exec`), from
   * the repository's root, as a {@linkcode Proc} the lab stops at close.
   *
   * @param host The host's index.
   * @param name The process's name in messages.
   * @param args Arguments of `deno` (`--no-lock` is added after `run`, as {@linkcode Proc} does).
   * @param env More environment variables.
   * @throws {RangeError} when there is no such host.
   */
  deno(host: number, name: string, args: string[], env: Record<string, string> = {}): Proc {
    const h = this.#host(host);
    const p = new Proc(name, args, env, [findIp()!, "netns", "exec", h.namespace]);
    this.#procs.push(p);
    return p;
  }

  /**
   * Runs `command` in host `host`'s namespace to its end.
   *
   * @param host The host's index.
   * @param command The program and its arguments, e.g. `["ip", "-br", "addr"]`.
   * @returns Its exit code and output.
   * @throws {RangeError} when there is no such host.
   */
  async run(host: number, command: readonly string[]): Promise<CommandOutput> {
    const h = this.#host(host);
    const out = await new Deno.Command(findIp()!, {
      args: ["netns", "exec", h.namespace, ...command],
      stdin: "null",
    }).output();
    const text = new TextDecoder();
    return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
  }

  /**
   * Cuts host `host` off the network (the bridge's end of its link goes
   * down); its processes keep running. Idempotent.
   * @throws {RangeError} when there is no such host.
   * @throws {IpCommandError} when `ip` refuses.
   */
  async cutLink(host: number): Promise<void> {
    const h = this.#host(host);
    await ip("link", "set", "dev", h.link, "down");
    this.#down.add(h.index);
  }

  /**
   * Puts host `host` back on the network. Idempotent.
   * @throws {RangeError} when there is no such host.
   * @throws {IpCommandError} when `ip` refuses.
   */
  async restoreLink(host: number): Promise<void> {
    const h = this.#host(host);
    await ip("link", "set", "dev", h.link, "up");
    this.#down.delete(h.index);
  }

  /** Whether host `host`'s link is up (not cut by {@linkcode SimulatedHosts.cutLink}). */
  linkIsUp(host: number): boolean {
    return !this.#down.has(this.#host(host).index);
  }

  /** Everything the processes started by {@linkcode SimulatedHosts.deno} printed, for failure messages. */
  logs(): string {
    return this.#procs.map((p) => `----- ${p.name}\n${p.output}`).join("\n");
  }

  /**
   * Removes everything the lab made (see the module docs), also after a
   * partly failed {@linkcode SimulatedHosts.create}. Idempotent: later calls
   * return the first one's promise.
   *
   * @throws {AggregateError} listing every step that failed; the other steps still ran.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const errors: unknown[] = [];
    const step = async (f: () => Promise<unknown>) => {
      try {
        await f();
      } catch (error) {
        errors.push(error);
      }
    };
    await Promise.all(this.#procs.map((p) => step(() => stopGracefully(p))));
    for (const h of this.hosts) await step(() => killNamespaceProcesses(h.namespace));
    await step(() => this.#nats?.stop() ?? Promise.resolve());
    for (const h of this.hosts) {
      // Deleting one end deletes the pair at once; a deleted namespace frees its end only later.
      await step(async () => {
        try {
          await ip("link", "del", h.link);
        } catch (error) {
          if (!(error instanceof IpCommandError && /Cannot find device/i.test(error.stderr))) {
            throw error;
          }
        }
      });
    }
    for (const h of this.hosts) {
      await step(async () => {
        try {
          await ip("netns", "del", h.namespace);
        } catch (error) {
          // Not created (a setup that failed early) is not an error.
          if (!(error instanceof IpCommandError && /No such file/i.test(error.stderr))) throw error;
        }
      });
    }
    await step(() => ip("link", "del", this.bridge));
    await step(() => Deno.remove(this.directory, { recursive: true }));
    Deno.removeSignalListener("SIGINT", this.#onSignal);
    Deno.removeSignalListener("SIGTERM", this.#onSignal);
    if (errors.length > 0) {
      throw new AggregateError(
        errors,
        `Cleaning up the simulated hosts of ${this.bridge} failed in ${errors.length} step(s): ` +
          errors.map((e) => (e instanceof Error ? e.message : String(e))).join("; "),
      );
    }
  }
}

/**
 * Picks a free subnet byte `x` and creates the bridge `weirbr<x>` (the lock
 * on it), with an alias naming this process, the namespaces' prefix and the
 * lab's temporary directory (for {@linkcode sweepAbandoned}).
 * @throws {Error} when no free subnet could be claimed in 16 draws.
 */
async function claimSubnet(
  nsPrefix: string,
  directory: string,
): Promise<{ x: number; bridge: string }> {
  for (let draw = 0; draw < 16; draw++) {
    const free = freeSubnetBytes(await usedNetworks());
    if (free.length === 0) break;
    const x = free[Math.floor(Math.random() * free.length)]!;
    const bridge = `weirbr${x}`;
    try {
      await ip("link", "add", "name", bridge, "type", "bridge");
    } catch (error) {
      if (error instanceof IpCommandError && /exists/i.test(error.stderr)) continue;
      throw error;
    }
    try {
      await ip(
        "link",
        "set",
        "dev",
        bridge,
        "alias",
        `${ALIAS_PREFIX} owner=${Deno.pid} namespaces=${nsPrefix} directory=${directory}`,
      );
    } catch (error) {
      await ip("link", "del", bridge).catch(() => {});
      throw error;
    }
    return { x, bridge };
  }
  throw new Error(
    `Cannot simulate hosts: no subnet ${SUBNET_PREFIX}.<x>.0/24 is free of the machine's ` +
      `addresses and routes, or every bridge weirbr<x> of a free one exists`,
  );
}

/** SIGTERM, then SIGKILL after {@linkcode STOP_GRACE_MS}; waits for the end. */
async function stopGracefully(p: Proc): Promise<void> {
  try {
    p.child.kill("SIGTERM");
  } catch {
    // already gone
  }
  const timer = setTimeout(() => {
    try {
      p.child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }, STOP_GRACE_MS);
  try {
    await p.wait();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs `fn` with a fresh lab of simulated hosts and closes the lab however
 * `fn` ends. When `fn` throws, its error is thrown and a cleanup failure is
 * printed to stderr beside it; otherwise a cleanup failure is thrown.
 *
 * @param options How many hosts.
 * @param fn What to do with the lab.
 * @returns What `fn` returned.
 * @throws whatever {@linkcode SimulatedHosts.create} or `fn` throws, or the
 *   cleanup's {@linkcode AggregateError}.
 */
export async function withSimulatedHosts<T>(
  options: SimulatedHostsOptions,
  fn: (lab: SimulatedHosts) => Promise<T>,
): Promise<T> {
  const lab = await SimulatedHosts.create(options);
  let result: T;
  try {
    result = await fn(lab);
  } catch (error) {
    await lab.close().catch((cleanup) => console.error(`simulated hosts: ${cleanup}`));
    throw error;
  }
  await lab.close();
  return result;
}
