import type { Redis } from 'ioredis';
import type { ChainRpc } from '../chain/rpcClients.ts';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { DomainContext } from '../context/domainContext.ts';
import type { Database } from '../db/database.ts';
import type { Logger } from '../logging/logger.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { DaemonQueues } from './daemonQueues.ts';

/** What the daemon's parts (HTTP, intake, workers, schedulers) share, built once by startDaemon. */
export interface DaemonRuntime {
  config: Config;
  logger: Logger;
  clock: Clock;
  metrics: Metrics;
  database: Database;
  /** The connection jobs are added on: fails fast when Redis is down (the sweepers catch up). */
  redis: Redis;
  queues: DaemonQueues;
  domain: DomainContext;
  rpcs: Map<number, ChainRpc>;
}

/** A started part of the daemon; stop() waits for what it has in flight. */
export interface DaemonPart {
  stop(): Promise<void>;
}
