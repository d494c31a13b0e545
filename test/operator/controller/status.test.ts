import { describe, expect, it } from '@jest/globals';
import {
  computeStatus,
  judgeService,
  type ObservedService,
} from '../../../operator/src/controller/status.js';

const T0 = '2026-11-21T10:00:00Z';
const T1 = '2026-11-21T10:05:00Z';

function service(overrides: Partial<ObservedService> = {}): ObservedService {
  return {
    component: 'llm',
    endpoint: 'http://s-llm.ns.svc:8080',
    deployment: {
      generation: 2,
      replicas: 1,
      status: { observedGeneration: 2, replicas: 1, readyReplicas: 1, updatedReplicas: 1 },
    },
    pods: [],
    ...overrides,
  };
}

const pod = (o: Partial<ObservedService['pods'][number]> = {}) => ({
  name: 's-llm-abc',
  phase: 'Pending',
  initContainers: [],
  containers: [],
  ...o,
});

describe('judgeService names the root cause', () => {
  it.each([
    [
      'no GPU node',
      service({
        deployment: { replicas: 1, status: {} },
        pods: [pod({ unschedulable: '0/4 nodes are available: 4 Insufficient nvidia.com/gpu.' })],
      }),
      'Unschedulable',
      'pod s-llm-abc cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.',
    ],
    [
      'model fetch failed',
      service({
        pods: [
          pod({
            initContainers: [
              { name: 'fetch-model', terminatedExitCode: 1, terminatedMessage: 'hf://x/y/z: 403 Forbidden' },
            ],
          }),
        ],
      }),
      'ModelFetchFailed',
      'model fetch failed: hf://x/y/z: 403 Forbidden',
    ],
    [
      'image pull error',
      service({
        pods: [
          pod({
            containers: [
              {
                name: 'llm',
                waitingReason: 'ImagePullBackOff',
                waitingMessage: 'Back-off pulling image "r/x:1"',
              },
            ],
          }),
        ],
      }),
      'ImagePullError',
      'ImagePullBackOff for s-llm-abc/llm: Back-off pulling image "r/x:1"',
    ],
    [
      'crash loop',
      service({
        pods: [
          pod({
            containers: [
              {
                name: 'llm',
                waitingReason: 'CrashLoopBackOff',
                restartCount: 4,
                terminatedMessage: 'exit 78',
              },
            ],
          }),
        ],
      }),
      'CrashLoop',
      's-llm-abc/llm is crash-looping (4 restarts); last exit: exit 78',
    ],
    [
      'PVC pending',
      service({ modelClaim: { name: 's-llm-model', phase: 'Pending' } }),
      'ModelVolumePending',
      expect.stringContaining('s-llm-model is Pending'),
    ],
    [
      'data PVC pending',
      service({ component: 'face', dataClaim: { name: 's-face-data', phase: 'Pending' } }),
      'DataVolumePending',
      'data PersistentVolumeClaim s-face-data is Pending: no volume is bound yet (check its storage class)',
    ],
    [
      'bad profile',
      service({ buildError: 'unknown resource profile "nvidia-gpu-x9"' }),
      'InvalidSpec',
      'unknown resource profile "nvidia-gpu-x9"',
    ],
    [
      'an object the API server refused',
      service({
        applyError: 'PersistentVolumeClaim s-llm-models was not applied: 422 Invalid: spec is immutable',
      }),
      'ApplyFailed',
      'PersistentVolumeClaim s-llm-models was not applied: 422 Invalid: spec is immutable',
    ],
    [
      'no GPU node while a WaitForFirstConsumer claim waits for the pod',
      service({
        deployment: { replicas: 1, status: { observedGeneration: 2, replicas: 1 }, generation: 2 },
        modelClaim: { name: 's-llm-models', phase: 'Pending' },
        pods: [pod({ unschedulable: '0/4 nodes are available: 4 Insufficient nvidia.com/gpu.' })],
      }),
      'Unschedulable',
      'pod s-llm-abc cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.',
    ],
    [
      'a claim with immediate binding that nothing binds (the pod waits for it)',
      service({
        modelClaim: { name: 's-llm-models', phase: 'Pending' },
        pods: [
          pod({
            unschedulable:
              '0/4 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling.',
          }),
        ],
      }),
      'ModelVolumePending',
      expect.stringContaining('s-llm-models is Pending'),
    ],
    [
      'a missing Secret',
      service({
        deployment: {
          generation: 1,
          replicas: 1,
          status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1 },
        },
        pods: [
          pod({
            containers: [
              {
                name: 'llm',
                waitingReason: 'CreateContainerConfigError',
                waitingMessage: 'secret "clinicalsuite-tokens" not found',
              },
            ],
          }),
        ],
      }),
      'ContainerConfigError',
      'CreateContainerConfigError for s-llm-abc/llm: secret "clinicalsuite-tokens" not found',
    ],
    [
      'a container the runtime cannot start',
      service({
        pods: [
          pod({
            containers: [
              { name: 'llm', waitingReason: 'RunContainerError', waitingMessage: 'exec: "node": not found' },
            ],
          }),
        ],
      }),
      'ContainerStartFailed',
      'RunContainerError for s-llm-abc/llm: exec: "node": not found',
    ],
    [
      'pods the Deployment controller cannot create',
      service({
        deployment: {
          generation: 1,
          replicas: 1,
          status: {
            observedGeneration: 1,
            conditions: [
              {
                type: 'ReplicaFailure',
                status: 'True',
                reason: 'FailedCreate',
                message: 'pods "s-llm-7c9" is forbidden: violates PodSecurity "restricted:latest"',
              },
            ],
          },
        },
      }),
      'ReplicaFailure',
      'cannot create pods: pods "s-llm-7c9" is forbidden: violates PodSecurity "restricted:latest"',
    ],
    [
      'a rollout past its deadline',
      service({
        deployment: {
          generation: 3,
          replicas: 2,
          status: {
            observedGeneration: 3,
            replicas: 3,
            readyReplicas: 1,
            updatedReplicas: 1,
            conditions: [
              {
                type: 'Progressing',
                status: 'False',
                reason: 'ProgressDeadlineExceeded',
                message: 'ReplicaSet "s-llm-7c9" has timed out progressing.',
              },
            ],
          },
        },
      }),
      'ProgressDeadlineExceeded',
      'ReplicaSet "s-llm-7c9" has timed out progressing. (1/2 replicas ready)',
    ],
  ])('%s', (_name, observed, reason, message) => {
    expect(judgeService(observed)).toMatchObject({ ready: false, reason, message });
  });

  it('is ready only when the current generation has every replica updated and ready', () => {
    expect(judgeService(service())).toMatchObject({ ready: true, reason: 'Ready' });
    const stale = service({
      deployment: {
        generation: 3,
        replicas: 1,
        status: { observedGeneration: 2, readyReplicas: 1, updatedReplicas: 1, replicas: 1 },
      },
    });
    expect(judgeService(stale)).toMatchObject({ ready: false, progressing: true, reason: 'RollingOut' });
    const surging = service({
      deployment: { replicas: 1, status: { readyReplicas: 1, updatedReplicas: 1, replicas: 2 } },
    });
    expect(judgeService(surging).ready).toBe(false);
  });
});

describe('judgeService for a service waiting for its dependencies', () => {
  it('is WaitingForDependencies before it is created', () => {
    expect(judgeService({ component: 'agent', endpoint: 'x', pods: [], waitingFor: ['llm'] })).toMatchObject({
      ready: false,
      progressing: true,
      degraded: false,
      reason: 'WaitingForDependencies',
      message: 'waiting for llm to be ready',
    });
  });

  it('once it exists: not Ready while it waits, its own state in the message; its own failure first', () => {
    expect(judgeService(service({ waitingFor: ['llm'] }))).toMatchObject({
      ready: false,
      reason: 'WaitingForDependencies',
      message: 'waiting for llm to be ready (1/1 replicas ready)',
    });
    const crashing = service({
      waitingFor: ['llm', 'stt'],
      pods: [pod({ containers: [{ name: 'agent', waitingReason: 'CrashLoopBackOff', restartCount: 2 }] })],
    });
    expect(judgeService(crashing)).toMatchObject({
      degraded: true,
      reason: 'CrashLoop',
      message: 's-llm-abc/agent is crash-looping (2 restarts); waiting for llm, stt to be ready',
    });
  });
});

describe('computeStatus', () => {
  it('aggregates services into the suite conditions and the printer column', () => {
    const status = computeStatus(
      [
        service(),
        service({
          component: 'agent',
          deployment: { replicas: 1, status: {} },
          pods: [pod({ unschedulable: 'no GPU' })],
        }),
      ],
      undefined,
      2,
      T0,
    );
    expect(status).toMatchObject({ observedGeneration: 2, servicesReady: 1, servicesTotal: 2, ready: '1/2' });
    expect(status.conditions?.find((c) => c.type === 'Ready')).toEqual({
      type: 'Ready',
      status: 'False',
      reason: 'Unschedulable',
      message: 'agent: pod s-llm-abc cannot be scheduled: no GPU',
      observedGeneration: 2,
      lastTransitionTime: T0,
    });
    expect(status.conditions?.find((c) => c.type === 'Degraded')?.status).toBe('True');
    expect(status.services?.llm?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('keeps lastTransitionTime while a status holds, so an unchanged status is identical', () => {
    const first = computeStatus([service()], undefined, 1, T0);
    const again = computeStatus([service()], first, 1, T1);
    expect(again).toEqual(first);
    const broken = computeStatus([service({ buildError: 'bad' })], first, 1, T1);
    expect(broken.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe(T1);
  });

  it('is Ready with no service enabled, and then names no services (an applied `{}` would be null)', () => {
    const status = computeStatus([], undefined, 1, T0);
    expect(status.conditions?.[0]).toMatchObject({ status: 'True', reason: 'NoServicesEnabled' });
    expect(status).not.toHaveProperty('services');
  });
});
