import { TokenStore } from '../auth.js';
import { ConfigError } from '../config.js';
import type { AuthOptions } from './build-app.js';

/** The part of a service's config that bearer auth reads (the kit's variables). */
export interface ServiceAuthConfig {
  readonly AUTH_TOKENS_FILE?: string | undefined;
  readonly AUTH_DISABLED?: boolean | undefined;
}

export interface ServiceAuthOptions {
  /**
   * The scope a token needs to be accepted here: the service's own name (`face`, `stt`, `llm`…;
   * the agent's is the spec's `ai_agent`). A token holding `*` is accepted everywhere.
   */
  readonly scope: string;
  /** The env var holding this service's own token (for messages). */
  readonly tokenEnv: string;
  /** Its value: a token with this service's scope. */
  readonly token: string | undefined;
  /**
   * The spec fixes this service's auth (the llm, the agent): AUTH_DISABLED is refused.
   */
  readonly alwaysOn?: boolean;
  /** 401 instead of 403 for a known token without the scope (the agent's contract). */
  readonly scopeFailureStatus?: 401 | 403;
}

/**
 * Bearer auth as every service configures it: on unless AUTH_DISABLED=true (refused where the spec
 * fixes auth). The tokens are the service's own (`tokenEnv`, scope `scope`) and those of
 * AUTH_TOKENS_FILE (`<token> <scope>[,<scope>]` lines, re-read when the file changes; a line without
 * scopes is a token of this service). A token is accepted only if one of its scopes is `scope` or
 * `*`, so one tokens file can serve several services without a token of one opening another.
 * Start-up fails with a ConfigError naming the variables when auth is on and no token is given.
 * With auth off, `buildApp` warns at start (README.md, "Security").
 */
export function serviceAuth(
  config: ServiceAuthConfig,
  options: ServiceAuthOptions & { readonly alwaysOn: true },
): AuthOptions;
export function serviceAuth(config: ServiceAuthConfig, options: ServiceAuthOptions): AuthOptions | undefined;
export function serviceAuth(config: ServiceAuthConfig, options: ServiceAuthOptions): AuthOptions | undefined {
  if (config.AUTH_DISABLED === true) {
    if (options.alwaysOn === true)
      throw new ConfigError([
        `AUTH_DISABLED: this service's authentication is fixed by the spec and cannot be turned off (give ${options.tokenEnv})`,
      ]);
    return undefined;
  }
  if (options.token === undefined && config.AUTH_TOKENS_FILE === undefined)
    throw new ConfigError([
      `${options.tokenEnv}: is required (or AUTH_TOKENS_FILE with \`${options.scope}\` tokens): ` +
        'every route but the probes, /metrics and the documentation needs a bearer token' +
        (options.alwaysOn === true
          ? ''
          : ' (AUTH_DISABLED=true serves without one, open to anyone who can reach the port)'),
    ]);
  const tokens = new TokenStore({
    tokens: options.token === undefined ? [] : [{ token: options.token, scopes: [options.scope] }],
    file: config.AUTH_TOKENS_FILE,
    defaultScopes: [options.scope],
  });
  return {
    tokens,
    scopes: [options.scope],
    ...(options.scopeFailureStatus === undefined ? {} : { scopeFailureStatus: options.scopeFailureStatus }),
  };
}
