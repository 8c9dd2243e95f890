/**
 * Unit tests of the pure parts of `_netns.ts`: parsing IPv4 networks, their
 * overlap, and which subnets `10.231.<x>.0/24` a machine's addresses and
 * routes leave free. (Building namespaces needs root; `multihost_test.ts`
 * and `bench/multihost_test.ts` do that.)
 *
 * @module
 */

import assert from "node:assert/strict";
import { freeSubnetBytes, ipv4Overlaps, parseIpv4Network } from "./_netns.ts";

Deno.test("parseIpv4Network() reads a.b.c.d/len, a bare address as a /32, and refuses the rest", () => {
  assert.deepEqual(parseIpv4Network("10.231.7.0/24"), {
    address: ((10 << 24) | (231 << 16) | (7 << 8)) >>> 0,
    prefixLength: 24,
  });
  assert.deepEqual(parseIpv4Network("255.255.255.255"), {
    address: 0xffffffff,
    prefixLength: 32,
  });
  for (const bad of ["default", "10.0.0.256/8", "10.0.0.0/33", "fd00::2/64", "10.0.0"]) {
    assert.equal(parseIpv4Network(bad), undefined, bad);
  }
});

Deno.test("ipv4Overlaps() compares the bits of the shorter prefix", () => {
  const n = (t: string) => parseIpv4Network(t)!;
  assert.ok(ipv4Overlaps(n("10.0.0.0/8"), n("10.231.7.0/24")));
  assert.ok(ipv4Overlaps(n("10.231.7.0/24"), n("10.231.7.5")));
  assert.ok(!ipv4Overlaps(n("10.231.7.0/24"), n("10.231.8.0/24")));
  assert.ok(!ipv4Overlaps(n("192.0.2.0/24"), n("10.231.7.0/24")));
});

Deno.test("freeSubnetBytes() leaves out subnets the machine's addresses or routes overlap, ignoring the default route", () => {
  const n = (t: string) => parseIpv4Network(t)!;
  assert.equal(freeSubnetBytes([n("0.0.0.0/0"), n("192.0.2.0/24")]).length, 256);
  const free = freeSubnetBytes([n("10.231.3.1"), n("10.231.200.0/23")]);
  assert.equal(free.length, 253);
  for (const x of [3, 200, 201]) assert.ok(!free.includes(x), String(x));
  assert.deepEqual(freeSubnetBytes([n("10.0.0.0/8")]), []);
});
