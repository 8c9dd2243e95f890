/**
 * The one place the NATS client packages and their versions are named.
 * Every other module imports NATS from here, so the pinned versions live in
 * one line each (a job imported by URL has no import map, so the versions
 * cannot live in `deno.json`).
 *
 * @module
 */

export * from "npm:@nats-io/transport-node@3.4.0";
export * as jetstreamApi from "npm:@nats-io/jetstream@3.4.0";
export * as kvApi from "npm:@nats-io/kv@3.4.0";
export * as objApi from "npm:@nats-io/obj@3.4.0";
