/** What the e2e global setup passes to the tests, through the environment. */
export interface E2EState {
  adminKubeconfig: string;
  /** Authenticates as system:serviceaccount:spec-guard:spec-guard. */
  specGuardKubeconfig: string;
}

export function e2eState(): E2EState {
  const admin = process.env.SPEC_GUARD_E2E_KUBECONFIG;
  if (!admin) throw new Error('SPEC_GUARD_E2E_KUBECONFIG is not set: run the e2e project through jest, whose global setup sets it');
  return { adminKubeconfig: admin, specGuardKubeconfig: process.env.SPEC_GUARD_E2E_SELF_KUBECONFIG ?? admin };
}
