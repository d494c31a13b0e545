/**
 * Events on a ClinicalSuite (`kubectl describe clinicalsuite/x` shows them): one per meaningful
 * step — objects applied or deleted, the suite turning Ready or not and why.
 */
import { randomBytes } from 'node:crypto';
import type { KubeClient } from './client.js';

export interface InvolvedObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
}

export type EventType = 'Normal' | 'Warning';

export class EventRecorder {
  constructor(
    private readonly client: KubeClient,
    private readonly component = 'clinicalsuite-operator',
    private readonly now: () => Date = () => new Date(),
  ) {}

  async record(on: InvolvedObject, type: EventType, reason: string, message: string): Promise<void> {
    const at = this.now().toISOString();
    await this.client.create({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${on.name}.${randomBytes(8).toString('hex')}`, namespace: on.namespace },
      involvedObject: {
        apiVersion: on.apiVersion,
        kind: on.kind,
        name: on.name,
        namespace: on.namespace,
        uid: on.uid,
      },
      type,
      reason,
      message: message.slice(0, 1024),
      source: { component: this.component },
      reportingComponent: this.component,
      firstTimestamp: at,
      lastTimestamp: at,
      count: 1,
    });
  }
}
