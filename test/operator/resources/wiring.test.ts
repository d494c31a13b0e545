import { describe, expect, it } from '@jest/globals';
import {
  buildConfigMap,
  buildDeployment,
  buildNetworkPolicy,
  buildPodDisruptionBudget,
  buildServiceMonitor,
  DEFAULT_OPERATOR_CONFIG,
} from '../../../operator/src/resources/index.js';
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

  it('gives the agent upstream URLs, its token and the llm token from their Secrets', () => {
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
    ]);
    expect(buildDeployment(suite, 'stt', config).spec.template.spec.containers[0]!.env).toBeUndefined();
  });

  it('keeps tokens out of the ConfigMap', () => {
    expect(Object.keys(buildConfigMap(suite, 'agent').data).filter((k) => k.includes('TOKEN'))).toEqual([]);
  });

  it('adds a PodDisruptionBudget only above one replica', () => {
    expect(buildPodDisruptionBudget(suite, 'llm')?.spec.maxUnavailable).toBe(1);
    expect(buildPodDisruptionBudget(suite, 'stt')).toBeNull();
  });

  it('closes only the services without auth, to the suite pods (and Prometheus when monitored)', () => {
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
    expect(buildServiceMonitor(monitored, 'stt')?.spec.endpoints).toEqual([
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
