import { TokenStore, type TokenGrant } from '../auth.js';
import type { AuthOptions } from './build-app.js';

/** The part of a service's config that bearer auth reads (the kit's AUTH_TOKENS_FILE). */
export interface AuthConfig {
  readonly AUTH_TOKENS_FILE?: string | undefined;
}

export interface AuthFromConfigOptions {
  /** Tokens besides the file's (e.g. the llm's API_TOKEN); empty ones are ignored. */
  readonly tokens?: readonly TokenGrant[];
  /** Auth on even with no file (a service that never answers without a token). */
  readonly required?: boolean;
  /** A token needs one of these scopes; empty: any known token. */
  readonly scopes?: readonly string[];
}

/**
 * Bearer auth as every service configures it: off (undefined) by default, on when
 * AUTH_TOKENS_FILE names a tokens file (re-read when it changes) or when `required`.
 */
export function authFromConfig(
  config: AuthConfig,
  options: AuthFromConfigOptions & { readonly required: true },
): AuthOptions;
export function authFromConfig(config: AuthConfig, options?: AuthFromConfigOptions): AuthOptions | undefined;
export function authFromConfig(
  config: AuthConfig,
  options: AuthFromConfigOptions = {},
): AuthOptions | undefined {
  if (config.AUTH_TOKENS_FILE === undefined && options.required !== true) return undefined;
  const tokens = new TokenStore({ tokens: options.tokens ?? [], file: config.AUTH_TOKENS_FILE });
  return options.scopes === undefined ? { tokens } : { tokens, scopes: options.scopes };
}
