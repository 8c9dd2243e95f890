/**
 * iproute2's `ip` and IPv4 subnets for the simulated hosts of `_netns.ts`:
 * finding and running `ip` ({@linkcode ip}, {@linkcode IpCommandError}),
 * whether this machine can build namespaces at all
 * ({@linkcode netnsUnavailable}), and which subnets `10.231.<x>.0/24` no
 * address or route of the machine overlaps ({@linkcode freeSubnetBytes} over
 * {@linkcode usedNetworks}; the parsing and overlap test are pure).
 *
 * @module
 */

/** Where iproute2's `ip` is looked for, besides `PATH`. */
const IP_CANDIDATES = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"];

/** The first two bytes of every subnet used: `10.231.<x>.0/24`. */
export const SUBNET_PREFIX = "10.231";

/** The `ip` binary, or undefined when there is none. */
export function findIp(): string | undefined {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((d) => d !== "");
  for (const candidate of [...dirs.map((d) => `${d}/ip`), ...IP_CANDIDATES]) {
    try {
      if (Deno.statSync(candidate).isFile) return candidate;
    } catch {
      // not there
    }
  }
  return undefined;
}

/**
 * Why this machine cannot build simulated hosts, or `undefined` when it can:
 * the process is not root, or iproute2's `ip` is missing.
 *
 * @returns A sentence naming what is missing, for a test's skip message.
 */
export function netnsUnavailable(): string | undefined {
  if (Deno.build.os !== "linux") return `network namespaces need Linux (this is ${Deno.build.os})`;
  if (Deno.uid() !== 0) {
    return `network namespaces need root (uid 0): this process runs as uid ${Deno.uid()}`;
  }
  if (findIp() === undefined) {
    return `iproute2's ip is not on PATH nor in ${IP_CANDIDATES.join(", ")} ` +
      "(Debian/Ubuntu: apt-get install iproute2)";
  }
  return undefined;
}

/** A failed `ip` command: its arguments, exit code and stderr. */
export class IpCommandError extends Error {
  /** The arguments of `ip`. */
  readonly args: readonly string[];
  /** Its exit code. */
  readonly code: number;
  /** What it printed on stderr. */
  readonly stderr: string;

  /**
   * @param args The arguments of `ip`.
   * @param code Its exit code.
   * @param stderr What it printed on stderr.
   */
  constructor(args: readonly string[], code: number, stderr: string) {
    super(`ip ${args.join(" ")} failed with exit code ${code}: ${stderr.trim()}`);
    this.name = "IpCommandError";
    this.args = args;
    this.code = code;
    this.stderr = stderr;
  }
}

/**
 * Runs `ip <args…>` to its end.
 *
 * @returns What it printed on stdout.
 * @throws {IpCommandError} when it exits with another code than 0.
 * @throws {Error} when there is no `ip` binary.
 */
export async function ip(...args: string[]): Promise<string> {
  const binary = findIp();
  if (binary === undefined) {
    throw new Error(`Cannot run ip ${args.join(" ")}: ${netnsUnavailable()}`);
  }
  const out = await new Deno.Command(binary, { args, stdin: "null" }).output();
  const text = new TextDecoder();
  if (out.code !== 0) throw new IpCommandError(args, out.code, text.decode(out.stderr));
  return text.decode(out.stdout);
}

/** An IPv4 network: its address as a 32-bit number and its prefix length. */
export interface Ipv4Network {
  /** The address, as an unsigned 32-bit number. */
  readonly address: number;
  /** The prefix length, 0 to 32. */
  readonly prefixLength: number;
}

/**
 * Parses `a.b.c.d` or `a.b.c.d/len` (a bare address is a /32).
 *
 * @returns The network, or undefined when `text` is neither (e.g. `default`).
 */
export function parseIpv4Network(text: string): Ipv4Network | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\/(\d{1,2}))?$/.exec(text);
  if (m === null) return undefined;
  const bytes = m.slice(1, 5).map(Number);
  const prefixLength = m[5] === undefined ? 32 : Number(m[5]);
  if (bytes.some((b) => b > 255) || prefixLength > 32) return undefined;
  const address = ((bytes[0]! << 24) | (bytes[1]! << 16) | (bytes[2]! << 8) | bytes[3]!) >>> 0;
  return { address, prefixLength };
}

/**
 * Whether two IPv4 networks share an address: they agree on the bits of the
 * shorter prefix. Pure.
 */
export function ipv4Overlaps(a: Ipv4Network, b: Ipv4Network): boolean {
  const bits = Math.min(a.prefixLength, b.prefixLength);
  if (bits === 0) return true;
  const mask = (0xffffffff << (32 - bits)) >>> 0;
  return ((a.address & mask) >>> 0) === ((b.address & mask) >>> 0);
}

/**
 * The third bytes `x` of the subnets `10.231.<x>.0/24` that none of `used`
 * overlaps. A `0.0.0.0/0` (the default route) is not counted as use: it
 * overlaps everything and conflicts with nothing. Pure.
 *
 * @param used The machine's addresses and route destinations.
 */
export function freeSubnetBytes(used: readonly Ipv4Network[]): number[] {
  const real = used.filter((n) => n.prefixLength > 0);
  const free: number[] = [];
  for (let x = 0; x < 256; x++) {
    const candidate = parseIpv4Network(`${SUBNET_PREFIX}.${x}.0/24`)!;
    if (!real.some((n) => ipv4Overlaps(n, candidate))) free.push(x);
  }
  return free;
}

/** Every IPv4 address and route destination of the machine (all tables). */
export async function usedNetworks(): Promise<Ipv4Network[]> {
  const out: Ipv4Network[] = [];
  const addrs = JSON.parse(await ip("-j", "-4", "addr")) as {
    addr_info?: { local?: string; prefixlen?: number }[];
  }[];
  for (const link of addrs) {
    for (const a of link.addr_info ?? []) {
      const n = parseIpv4Network(`${a.local}/${a.prefixlen}`);
      if (n !== undefined) out.push(n);
    }
  }
  const routes = JSON.parse(await ip("-j", "-4", "route", "show", "table", "all")) as {
    dst?: string;
  }[];
  for (const r of routes) {
    const n = r.dst === undefined ? undefined : parseIpv4Network(r.dst);
    if (n !== undefined) out.push(n);
  }
  return out;
}
