/**
 * The daemon's roles: intake (webhook routes), worker (BullMQ workers), scheduler (the sweepers'
 * job schedulers). `all` runs the three in one process.
 */
export type Role = 'intake' | 'worker' | 'scheduler';
export const ALL_ROLES: Role[] = ['intake', 'worker', 'scheduler'];
