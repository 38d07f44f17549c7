import { envFields } from './env.ts';
import { ConfigError } from './errors.ts';

/** Where the daemon's queues live: enough for a command that only adds jobs. */
export interface QueueSettings {
  redisUrl: string;
  queuePrefix: string;
}

/**
 * REDIS_URL and QUEUE_PREFIX alone, for commands that hand work to a running daemon
 * (`stablebooks webhooks replay`): they need not carry the daemon's stores and secrets.
 */
export function loadQueueSettings(env: Record<string, string | undefined>): QueueSettings {
  const problems: string[] = [];
  const redis = envFields.REDIS_URL.safeParse(env.REDIS_URL || undefined);
  if (!redis.success)
    problems.push(
      env.REDIS_URL ? `REDIS_URL: ${redis.error.issues[0]?.message}` : 'REDIS_URL: is required but not set',
    );
  const prefix = envFields.QUEUE_PREFIX.safeParse(env.QUEUE_PREFIX || undefined);
  if (!prefix.success) problems.push(`QUEUE_PREFIX: ${prefix.error.issues[0]?.message}`);
  if (!redis.success || !prefix.success) throw new ConfigError(problems);
  return { redisUrl: redis.data, queuePrefix: prefix.data };
}
