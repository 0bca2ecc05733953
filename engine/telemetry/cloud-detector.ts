/**
 * Cloud and Kubernetes identity for the resource (SPEC.md 4.5: the
 * exposition carries the cloud identity), from the environment the platform
 * sets and one local file, never the network: a metadata endpoint (EC2 IMDS,
 * the ECS task endpoint, the GCE metadata server) would put a network call,
 * and its timeout, in every boot path. That is also why no
 * `@opentelemetry/resource-detector-*` package is used: their AWS EC2/ECS,
 * GCP and Azure VM detectors all ask a metadata endpoint. What needs one
 * (instance id, zone) is left to the collector's resourcedetection
 * processor.
 *
 * Mapped to the OpenTelemetry semantic conventions: `cloud.provider`,
 * `cloud.platform`, `cloud.region`, `cloud.account.id` where the
 * environment gives it, `faas.*` for functions and Cloud Run,
 * `k8s.namespace.name` and `k8s.pod.name` under Kubernetes.
 */
import { readFileSync } from 'node:fs'
import type { ResourceDetector } from '@opentelemetry/resources'

/** The service account namespace file every pod gets (unless automounting is off). */
export const K8S_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace'

type Env = Readonly<Record<string, string | undefined>>

function given(env: Env, key: string): string | undefined {
  const value = env[key]?.trim()
  return value === undefined || value === '' ? undefined : value
}

/** `arn:aws:iam::123456789012:role/name` (the IRSA / pod identity role): the account id. */
function awsAccount(env: Env): string | undefined {
  const arn = given(env, 'AWS_ROLE_ARN')
  const match = arn === undefined ? null : /^arn:aws[a-z-]*:[a-z]+::(\d{12}):/.exec(arn)
  return match?.[1]
}

function aws(env: Env, kubernetes: boolean): Record<string, string> | undefined {
  const execution = given(env, 'AWS_EXECUTION_ENV')
  const ecs = given(env, 'ECS_CONTAINER_METADATA_URI_V4') ?? given(env, 'ECS_CONTAINER_METADATA_URI')
  const region = given(env, 'AWS_REGION') ?? given(env, 'AWS_DEFAULT_REGION')
  const lambda = given(env, 'AWS_LAMBDA_FUNCTION_NAME')
  if (execution === undefined && ecs === undefined && region === undefined && lambda === undefined) return undefined
  const out: Record<string, string> = { 'cloud.provider': 'aws' }
  // AWS_EXECUTION_ENV: `AWS_Lambda_nodejs20.x`, `AWS_ECS_FARGATE`, `AWS_ECS_EC2`, `AWS_ECS_MANAGED_INSTANCES`.
  if (lambda !== undefined || execution?.startsWith('AWS_Lambda_') === true) {
    out['cloud.platform'] = 'aws_lambda'
    if (lambda !== undefined) out['faas.name'] = lambda
    const version = given(env, 'AWS_LAMBDA_FUNCTION_VERSION')
    if (version !== undefined) out['faas.version'] = version
  } else if (ecs !== undefined || execution?.startsWith('AWS_ECS_') === true) {
    out['cloud.platform'] = 'aws_ecs'
    if (execution === 'AWS_ECS_FARGATE') out['aws.ecs.launchtype'] = 'fargate'
    else if (execution === 'AWS_ECS_EC2') out['aws.ecs.launchtype'] = 'ec2'
  } else if (kubernetes) {
    out['cloud.platform'] = 'aws_eks'
  }
  if (region !== undefined) out['cloud.region'] = region
  const account = awsAccount(env)
  if (account !== undefined) out['cloud.account.id'] = account
  return out
}

function gcp(env: Env, kubernetes: boolean): Record<string, string> | undefined {
  const project = given(env, 'GOOGLE_CLOUD_PROJECT') ?? given(env, 'GCLOUD_PROJECT')
  const service = given(env, 'K_SERVICE')
  if (project === undefined && service === undefined) return undefined
  const out: Record<string, string> = { 'cloud.provider': 'gcp' }
  if (service !== undefined) {
    // Cloud Run services set K_SERVICE, K_REVISION and K_CONFIGURATION (and so do Cloud Run functions).
    out['cloud.platform'] = 'gcp_cloud_run'
    out['faas.name'] = service
    const revision = given(env, 'K_REVISION')
    if (revision !== undefined) out['faas.version'] = revision
  } else if (kubernetes) {
    out['cloud.platform'] = 'gcp_kubernetes_engine'
  }
  if (project !== undefined) out['cloud.account.id'] = project
  return out
}

function azure(env: Env, kubernetes: boolean): Record<string, string> | undefined {
  const site = given(env, 'WEBSITE_SITE_NAME')
  if (site === undefined) return kubernetes && given(env, 'AZURE_CLIENT_ID') !== undefined && given(env, 'AZURE_TENANT_ID') !== undefined
    ? { 'cloud.provider': 'azure', 'cloud.platform': 'azure_aks' }
    : undefined
  // App Service and Functions (FUNCTIONS_EXTENSION_VERSION marks the latter).
  const out: Record<string, string> = {
    'cloud.provider': 'azure',
    'cloud.platform': given(env, 'FUNCTIONS_EXTENSION_VERSION') === undefined ? 'azure_app_service' : 'azure_functions',
  }
  if (given(env, 'FUNCTIONS_EXTENSION_VERSION') !== undefined) out['faas.name'] = site
  const region = given(env, 'REGION_NAME')
  if (region !== undefined) out['cloud.region'] = region
  // WEBSITE_OWNER_NAME: `{subscription id}+{resource group}-{region}webspace`.
  const owner = given(env, 'WEBSITE_OWNER_NAME')
  const subscription = owner === undefined ? undefined : /^([0-9a-fA-F-]{36})\+/.exec(owner)?.[1]
  if (subscription !== undefined) out['cloud.account.id'] = subscription
  return out
}

function readTrimmed(path: string): string | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim()
    return text === '' ? undefined : text
  } catch {
    return undefined
  }
}

/** The attributes found in `env` (and, under Kubernetes, the namespace file); empty outside any cloud. */
export function cloudAttributes(env: Env, namespaceFile: string = K8S_NAMESPACE_FILE): Record<string, string> {
  const kubernetes = given(env, 'KUBERNETES_SERVICE_HOST') !== undefined
  const out: Record<string, string> = { ...(aws(env, kubernetes) ?? gcp(env, kubernetes) ?? azure(env, kubernetes)) }
  if (kubernetes) {
    // A pod's hostname is its name (unless the pod spec sets `hostname`).
    const pod = given(env, 'HOSTNAME')
    if (pod !== undefined) out['k8s.pod.name'] = pod
    const namespace = readTrimmed(namespaceFile)
    if (namespace !== undefined) out['k8s.namespace.name'] = namespace
  }
  return out
}

/** A resource detector over cloudAttributes: synchronous, no network. */
export function cloudDetector(env: Env = process.env, namespaceFile?: string): ResourceDetector {
  return {
    detect: () => ({ attributes: cloudAttributes(env, namespaceFile) }),
  }
}
