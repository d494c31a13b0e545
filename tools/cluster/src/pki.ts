/**
 * Credentials of a throwaway test cluster: a CA and the API server's serving certificate (openssl,
 * since node:crypto cannot issue X.509 certificates), the service-account signing key pair and
 * static bearer tokens (node:crypto). Everything is made fresh by each `up` and removed by `down`.
 */
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { NODE_NAME, NODE_RBAC_USERS } from './node-config.js';

const run = promisify(execFile);

/** Who talks to the API server, with the groups RBAC knows them by. */
export const IDENTITIES = {
  admin: { user: 'clinicalsuite-admin', groups: ['system:masters'] },
  // Users whose permissions the API server bootstraps itself (system:kube-controller-manager …).
  'kube-controller-manager': { user: 'system:kube-controller-manager', groups: [] },
  'kube-scheduler': { user: 'system:kube-scheduler', groups: [] },
  // kwok writes node and pod status, leases and volumes of any node: cluster admin is simplest.
  kwok: { user: 'kwok', groups: ['system:masters'] },
  // The real node's processes (`up --node`): the kubelet under the Node authorizer, kube-proxy under
  // the role the API server bootstraps for it, the others under node-config.ts's roles.
  kubelet: { user: `system:node:${NODE_NAME}`, groups: ['system:nodes'] },
  'kube-proxy': { user: 'system:kube-proxy', groups: [] },
  coredns: { user: NODE_RBAC_USERS.coredns, groups: [] },
  'local-path-provisioner': { user: NODE_RBAC_USERS['local-path-provisioner'], groups: [] },
  'kube-router': { user: NODE_RBAC_USERS['kube-router'], groups: [] },
} as const;
export type Identity = keyof typeof IDENTITIES;

export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  /** The API server's client certificate towards kubelets (exec, logs, port-forward). */
  kubeletClientCert: string;
  kubeletClientKey: string;
  saPublicKey: string;
  saPrivateKey: string;
  tokenFile: string;
  tokens: Record<Identity, string>;
  /** The CA certificate itself (PEM), for kubeconfigs and clients. */
  caPem: string;
}

/**
 * Names the serving certificate is valid for: loopback, the in-cluster `kubernetes` service, and
 * any further address the API server is reached at (the real node's link to the host).
 */
export function servingSubjectAltNames(serviceIp: string, extraIps: readonly string[] = []): string {
  const dns = ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'];
  dns.push('kubernetes.default.svc.cluster.local');
  const ips = ['127.0.0.1', serviceIp, ...extraIps].map((ip) => `IP:${ip}`);
  return [...dns.map((d) => `DNS:${d}`), ...ips].join(',');
}

/** One line of --token-auth-file: token,user,uid[,"group1,group2"]. */
export function tokenFileLine(token: string, user: string, groups: readonly string[]): string {
  const line = `${token},${user},${user}`;
  return groups.length > 0 ? `${line},"${groups.join(',')}"` : line;
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (error) {
    const e = error as Error & { stderr?: string; code?: string };
    if (e.code === 'ENOENT') throw new Error('openssl is needed to make the test cluster certificates');
    throw new Error(`openssl ${args[0] ?? ''} failed: ${e.stderr ?? e.message}`);
  }
}

export async function makePki(
  dir: string,
  serviceIp: string,
  extraIps: readonly string[] = [],
): Promise<Pki> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const p = (name: string): string => join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

  await openssl(
    ['req', '-x509', ...ec, '-keyout', p('ca.key'), '-out', p('ca.crt'), '-days', '3650']
      .concat(['-subj', '/CN=clinicalsuite-test-ca', '-addext', 'basicConstraints=critical,CA:TRUE'])
      .concat(['-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature']),
  );
  // A key and a certificate of the CA for `name`, with the given subject and X.509 extensions.
  const issue = async (name: string, subject: string, extensions: readonly string[]): Promise<void> => {
    await openssl(['req', ...ec, '-keyout', p(`${name}.key`), '-out', p(`${name}.csr`), '-subj', subject]);
    await writeFile(p(`${name}.ext`), extensions.join('\n') + '\n');
    await openssl(
      ['x509', '-req', '-in', p(`${name}.csr`), '-CA', p('ca.crt'), '-CAkey', p('ca.key')].concat([
        '-CAcreateserial',
        '-days',
        '365',
        '-extfile',
        p(`${name}.ext`),
        '-out',
        p(`${name}.crt`),
      ]),
    );
  };
  await issue('apiserver', '/CN=kube-apiserver', [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    `subjectAltName=${servingSubjectAltNames(serviceIp, extraIps)}`,
  ]);
  // The API server towards kubelets: a client of the cluster's CA in system:masters, as kubeadm's
  // apiserver-kubelet-client is (kubelets ask the API server whether it may; masters may).
  await issue('kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=clientAuth',
  ]);

  const sa = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  await writeFile(p('sa.key'), sa.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  await writeFile(p('sa.pub'), sa.publicKey.export({ type: 'spki', format: 'pem' }));

  const tokens = {} as Record<Identity, string>;
  const lines: string[] = [];
  for (const [name, who] of Object.entries(IDENTITIES) as [Identity, (typeof IDENTITIES)[Identity]][]) {
    tokens[name] = randomBytes(24).toString('hex');
    lines.push(tokenFileLine(tokens[name], who.user, who.groups));
  }
  await writeFile(p('tokens.csv'), lines.join('\n') + '\n', { mode: 0o600 });

  return {
    caCert: p('ca.crt'),
    caKey: p('ca.key'),
    servingCert: p('apiserver.crt'),
    servingKey: p('apiserver.key'),
    kubeletClientCert: p('kubelet-client.crt'),
    kubeletClientKey: p('kubelet-client.key'),
    saPublicKey: p('sa.pub'),
    saPrivateKey: p('sa.key'),
    tokenFile: p('tokens.csv'),
    tokens,
    caPem: await readFile(p('ca.crt'), 'utf8'),
  };
}
