/** The reasoning engine's modules (the service entry point lands in main.ts). */
export const SERVICE_NAME = 'reasoning';
