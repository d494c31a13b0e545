/** kind-config.yaml's text with the cluster name and models directory set, without host ports. */
export function e2eKindConfig(text: string, name: string, modelsDir: string): string;
