import { describe, expect, it } from '@jest/globals';
import {
  authSecretData,
  authSecretKeys,
  buildConfigMap,
  buildDeployment,
  buildNetworkPolicy,
  buildPodDisruptionBudget,
  buildService,
  buildServiceMonitor,
  componentLabels,
  DEFAULT_OPERATOR_CONFIG,
  podConfigHash,
  storeWarnings,
  type OwnedSuite,
} from '../../../operator/src/resources/index.js';
import type { ComponentKey } from '../../../operator/src/api/v1alpha1/index.js';
import { suiteWith } from './fixtures.js';

const config = DEFAULT_OPERATOR_CONFIG;

describe('wiring', () => {
  const suite = suiteWith(
    {
      llm: { enabled: true, replicas: 2 },
      agent: { enabled: true, env: [{ name: 'X', value: '1' }] },
      stt: { enabled: true },
    },
    { auth: { agentTokenSecretRef: { name: 'tokens', key: 'agent' } }, networkPolicy: { enabled: true } },
  );

  it('gives the agent upstream URLs, its token and those of what it calls, from their Secrets', () => {
    expect(buildConfigMap(suite, 'agent').data).toMatchObject({
      LLM_URL: 'http://demo-llm.clinical.svc:8080',
      STT_URL: 'http://demo-stt.clinical.svc:8080',
      MAX_CONCURRENCY: '16',
      PORT: '8080',
      HOST: '0.0.0.0',
      X: '1',
    });
    expect(buildDeployment(suite, 'agent', config).spec.template.spec.containers[0]!.env).toEqual([
      { name: 'AI_AGENT_API_TOKEN', valueFrom: { secretKeyRef: { name: 'tokens', key: 'agent' } } },
      { name: 'API_TOKEN', valueFrom: { secretKeyRef: { name: 'demo-auth', key: 'api-token' } } },
      { name: 'STT_API_TOKEN', valueFrom: { secretKeyRef: { name: 'demo-auth', key: 'stt-token' } } },
    ]);
    // A service gets its own token only: none of the llm's or the agent's.
    expect(buildDeployment(suite, 'stt', config).spec.template.spec.containers[0]!.env).toEqual([
      { name: 'STT_API_TOKEN', valueFrom: { secretKeyRef: { name: 'demo-auth', key: 'stt-token' } } },
    ]);
  });

  it('keeps tokens out of the ConfigMap', () => {
    expect(Object.keys(buildConfigMap(suite, 'agent').data).filter((k) => k.includes('TOKEN'))).toEqual([]);
  });

  it('adds a PodDisruptionBudget only above one replica', () => {
    expect(buildPodDisruptionBudget(suite, 'llm')?.spec.maxUnavailable).toBe(1);
    expect(buildPodDisruptionBudget(suite, 'stt')).toBeNull();
  });

  it('closes the services only the suite calls, to the suite pods (and Prometheus when monitored)', () => {
    expect(buildNetworkPolicy(suite, 'llm', config)).toBeNull();
    expect(buildNetworkPolicy(suite, 'agent', config)).toBeNull();
    const policy = buildNetworkPolicy(suite, 'stt', config);
    expect(policy?.spec.ingress).toEqual([
      {
        from: [
          {
            podSelector: {
              matchLabels: {
                'app.kubernetes.io/instance': 'demo',
                'app.kubernetes.io/part-of': 'clinicalsuite',
              },
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 8080 }],
      },
    ]);
    const monitored = suiteWith(
      { stt: { enabled: true } },
      { networkPolicy: { enabled: true }, monitoring: { serviceMonitor: true } },
    );
    expect(buildNetworkPolicy(monitored, 'stt', config)?.spec.ingress[0]?.from[1]).toEqual({
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
    });
    expect(buildNetworkPolicy(suiteWith({ stt: { enabled: true } }), 'stt', config)).toBeNull();
  });

  it('adds a ServiceMonitor only when monitoring asks for one, at its interval', () => {
    expect(buildServiceMonitor(suite, 'stt')).toBeNull();
    const monitored = suiteWith(
      { stt: { enabled: true } },
      { monitoring: { serviceMonitor: true, scrapeInterval: '10s' } },
    );
    expect(buildServiceMonitor(monitored, 'stt')?.spec.endpoints).toMatchObject([
      { port: 'http', path: '/metrics', scheme: 'http', interval: '10s' },
    ]);
  });

  it('runs every container restricted', () => {
    const pod = buildDeployment(suite, 'llm', config).spec.template.spec;
    for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
      expect(c.securityContext).toMatchObject({
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      });
    }
    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
  });
});

describe('wiring: the task agent and its proxy', () => {
  const pg = 'postgres://tasks@db.clinical.svc/tasks';
  const tasks = (agent: Record<string, unknown> = {}, spec: Record<string, unknown> = {}) =>
    suiteWith(
      { llm: { enabled: true }, taskAgent: { enabled: true, ...agent }, taskProxy: { enabled: true } },
      { networkPolicy: { enabled: true }, ...spec },
    );
  const container = (suite: OwnedSuite, key: 'taskAgent' | 'taskProxy') =>
    buildDeployment(suite, key, config).spec.template.spec.containers[0]!;
  const fromAuth = (name: string, key: string) => ({
    name,
    valueFrom: { secretKeyRef: { name: 'demo-auth', key } },
  });

  it('gives the proxy the agent’s URL and token, and its first user from the generated Secret', () => {
    const suite = tasks();
    expect(buildConfigMap(suite, 'taskProxy').data).toMatchObject({
      TASK_AGENT_URL: 'http://demo-task-agent.clinical.svc:8080',
    });
    expect(container(suite, 'taskProxy').env).toEqual([
      fromAuth('TASK_AGENT_API_TOKEN', 'task-agent-token'),
      fromAuth('TASK_PROXY_USER', 'task-proxy-user'),
      fromAuth('TASK_PROXY_PASSWORD', 'task-proxy-password'),
    ]);
    // The agent accepts the same token and calls the llm with the llm's; no code search here.
    expect(container(suite, 'taskAgent').env).toEqual([
      fromAuth('TASK_AGENT_API_TOKEN', 'task-agent-token'),
      fromAuth('API_TOKEN', 'api-token'),
    ]);
    expect(buildConfigMap(suite, 'taskAgent').data).toMatchObject({
      LLM_URL: 'http://demo-llm.clinical.svc:8080',
    });
    expect(buildConfigMap(suite, 'taskAgent').data).not.toHaveProperty('CODE_SEARCH_URL');
  });

  it('shares the agent’s DATABASE_URL with the proxy, and warns when there is none to share', () => {
    const alone = tasks();
    expect(buildConfigMap(alone, 'taskProxy').data).not.toHaveProperty('DATABASE_URL');
    expect(buildConfigMap(alone, 'taskProxy').data).not.toHaveProperty('TASK_AGENT_DB');
    expect(storeWarnings(alone, 'taskProxy')).toEqual([
      {
        reason: 'NoSharedStore',
        message: expect.stringContaining('set DATABASE_URL in spec.services.taskAgent.env') as unknown,
      },
    ]);
    const shared = tasks({ replicas: 2, env: [{ name: 'DATABASE_URL', value: pg }] });
    expect(buildConfigMap(shared, 'taskProxy').data['DATABASE_URL']).toBe(pg);
    expect(storeWarnings(shared, 'taskProxy')).toEqual([]);
    expect(storeWarnings(shared, 'taskAgent')).toEqual([]);
    // A new URL rolls the proxy's pods too.
    expect(podConfigHash(shared, 'taskProxy')).not.toBe(podConfigHash(alone, 'taskProxy'));
  });

  it('mounts a users Secret read-only instead when spec.auth names one', () => {
    const suite = tasks({}, { auth: { taskProxyUsersSecretRef: { name: 'proxy-users' } } });
    const c = container(suite, 'taskProxy');
    expect(c.env).toEqual([fromAuth('TASK_AGENT_API_TOKEN', 'task-agent-token')]);
    const file = buildConfigMap(suite, 'taskProxy').data['TASK_PROXY_USERS_FILE'];
    const mount = c.volumeMounts.find((m) => m.name === 'users');
    expect(mount).toEqual({ name: 'users', mountPath: '/etc/clinicalsuite/users', readOnly: true });
    const volume = buildDeployment(suite, 'taskProxy', config).spec.template.spec.volumes.find(
      (v) => v.name === 'users',
    );
    expect(volume).toEqual({
      name: 'users',
      secret: { secretName: 'proxy-users', items: [{ key: 'users', path: 'users' }], defaultMode: 0o440 },
    });
    expect(file).toBe(`${mount!.mountPath}/users`);
    expect(container(tasks(), 'taskProxy').volumeMounts.map((m) => m.name)).toEqual(['data', 'tmp']);
    expect(buildConfigMap(tasks(), 'taskProxy').data).not.toHaveProperty('TASK_PROXY_USERS_FILE');
  });

  it('pins a client to one proxy pod (its sign-ins live in memory)', () => {
    expect(buildService(tasks(), 'taskProxy').spec).toMatchObject({
      sessionAffinity: 'ClientIP',
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 3600 } },
    });
    expect(buildService(tasks(), 'taskAgent').spec).not.toHaveProperty('sessionAffinity');
  });

  it('lets the proxy reach the agent under NetworkPolicies', () => {
    const suite = tasks();
    /** Whether the policy of `key` (none: all may) lets a pod with these labels in on 8080. */
    const admits = (s: OwnedSuite, key: ComponentKey, pod: Record<string, string>): boolean => {
      const policy = buildNetworkPolicy(s, key, config);
      return (
        policy === null ||
        policy.spec.ingress.some(
          (rule) =>
            rule.ports.some((p) => p.port === 8080) &&
            rule.from.some(
              (peer) =>
                peer.namespaceSelector === undefined &&
                Object.entries(peer.podSelector.matchLabels).every(([k, v]) => pod[k] === v),
            ),
        )
      );
    };
    const proxyPod = componentLabels(suite, 'taskProxy');
    expect(admits(suite, 'taskAgent', proxyPod)).toBe(true);
    // The check is not vacuous: a closed service admits suite pods and nothing else.
    const closed = suiteWith({ stt: { enabled: true } }, { networkPolicy: { enabled: true } });
    expect(buildNetworkPolicy(closed, 'stt', config)).not.toBeNull();
    expect(admits(closed, 'stt', componentLabels(closed, 'taskProxy'))).toBe(true);
    expect(admits(closed, 'stt', { 'app.kubernetes.io/name': 'intruder' })).toBe(false);
    // The proxy is a front door (it signs users in); the agent checks its token.
    expect(buildNetworkPolicy(suite, 'taskProxy', config)).toBeNull();
  });
});

describe('the generated auth Secret', () => {
  const generate = (() => {
    let n = 0;
    return () => `random-${++n}`;
  })();
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const decoded = (data: Record<string, string> | null) =>
    Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

  it('holds every token without a ref and the task proxy’s first user (admin)', () => {
    const data = authSecretData(suiteWith({}), undefined, generate);
    expect(Object.keys(data ?? {})).toEqual([
      'agent-token',
      'api-token',
      'code-search-token',
      'face-token',
      'medllm-token',
      'ocr-token',
      'patient-sim-token',
      'reasoning-token',
      'stt-token',
      'task-agent-token',
      'task-proxy-password',
      'task-proxy-user',
      'tts-token',
    ]);
    expect(decoded(data)['task-proxy-user']).toBe('admin');
    expect(decoded(data)['task-proxy-password']).toMatch(/^random-/);
  });

  it('keeps the values it has, adds only what is missing, and is not written when complete', () => {
    const before = { 'api-token': b64('a'), 'agent-token': b64('b') };
    const data = authSecretData(suiteWith({}), before, generate);
    expect(data).toMatchObject(before);
    expect(Object.keys(data ?? {})).toHaveLength(13);
    expect(authSecretData(suiteWith({}), data!, generate)).toBeNull();
  });

  it('leaves out what explicit refs provide', () => {
    const suite = suiteWith(
      {},
      {
        auth: {
          apiTokenSecretRef: { name: 't', key: 'llm' },
          agentTokenSecretRef: { name: 't', key: 'agent' },
          taskAgentTokenSecretRef: { name: 't', key: 'tasks' },
          taskProxyUsersSecretRef: { name: 'users' },
        },
      },
    );
    const generated = [
      'face-token',
      'medllm-token',
      'reasoning-token',
      'stt-token',
      'ocr-token',
      'tts-token',
      'code-search-token',
      'patient-sim-token',
    ];
    expect(authSecretKeys(suite)).toEqual(generated);
    expect(authSecretKeys(suiteWith({}, { auth: { taskProxyUsersSecretRef: { name: 'users' } } }))).toEqual([
      'api-token',
      'agent-token',
      'face-token',
      'medllm-token',
      'reasoning-token',
      'task-agent-token',
      'stt-token',
      'ocr-token',
      'tts-token',
      'code-search-token',
      'patient-sim-token',
    ]);
  });
});
