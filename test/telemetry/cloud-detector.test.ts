/**
 * Cloud and Kubernetes identity from the environment (SPEC.md 4.5), mapped
 * to the OTel semantic conventions, with no network in the boot path: the
 * detector answers synchronously from the environment and one local file.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { cloudAttributes, cloudDetector } from '../../engine/telemetry/cloud-detector.js'

const NO_FILE = '/nonexistent/namespace'

t.test('outside any cloud: nothing', async (t) => {
  t.same(cloudAttributes({ HOSTNAME: 'laptop', PATH: '/usr/bin' }, NO_FILE), {})
})

t.test('AWS: region, ECS, Lambda, EKS with the account of its role', async (t) => {
  t.same(cloudAttributes({ AWS_REGION: 'eu-west-1', AWS_DEFAULT_REGION: 'us-east-1' }, NO_FILE), { 'cloud.provider': 'aws', 'cloud.region': 'eu-west-1' }, 'AWS_REGION wins')
  t.same(cloudAttributes({ AWS_DEFAULT_REGION: 'us-east-1' }, NO_FILE), { 'cloud.provider': 'aws', 'cloud.region': 'us-east-1' })
  t.same(cloudAttributes({ AWS_EXECUTION_ENV: 'AWS_ECS_FARGATE', ECS_CONTAINER_METADATA_URI_V4: 'http://169.254.170.2/v4/abc', AWS_REGION: 'eu-west-1' }, NO_FILE), {
    'cloud.provider': 'aws', 'cloud.platform': 'aws_ecs', 'aws.ecs.launchtype': 'fargate', 'cloud.region': 'eu-west-1',
  }, 'the metadata URI is only tested for presence, never asked')
  t.same(cloudAttributes({ ECS_CONTAINER_METADATA_URI_V4: 'http://169.254.170.2/v4/abc' }, NO_FILE), { 'cloud.provider': 'aws', 'cloud.platform': 'aws_ecs' })
  t.same(cloudAttributes({ AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs20.x', AWS_LAMBDA_FUNCTION_NAME: 'fn', AWS_LAMBDA_FUNCTION_VERSION: '$LATEST', AWS_REGION: 'us-west-2' }, NO_FILE), {
    'cloud.provider': 'aws', 'cloud.platform': 'aws_lambda', 'faas.name': 'fn', 'faas.version': '$LATEST', 'cloud.region': 'us-west-2',
  })
  t.same(cloudAttributes({ KUBERNETES_SERVICE_HOST: '10.0.0.1', HOSTNAME: 'proxy-7d9f-abcde', AWS_REGION: 'eu-central-1', AWS_ROLE_ARN: 'arn:aws:iam::123456789012:role/proxy' }, NO_FILE), {
    'cloud.provider': 'aws', 'cloud.platform': 'aws_eks', 'cloud.region': 'eu-central-1', 'cloud.account.id': '123456789012', 'k8s.pod.name': 'proxy-7d9f-abcde',
  }, 'EKS; no namespace file readable: no namespace')
})

t.test('GCP: Cloud Run, GKE', async (t) => {
  t.same(cloudAttributes({ GOOGLE_CLOUD_PROJECT: 'acme-prod', K_SERVICE: 'proxy', K_REVISION: 'proxy-00042-xyz', K_CONFIGURATION: 'proxy' }, NO_FILE), {
    'cloud.provider': 'gcp', 'cloud.platform': 'gcp_cloud_run', 'faas.name': 'proxy', 'faas.version': 'proxy-00042-xyz', 'cloud.account.id': 'acme-prod',
  })
  t.same(cloudAttributes({ GOOGLE_CLOUD_PROJECT: 'acme-prod', KUBERNETES_SERVICE_HOST: '10.0.0.1' }, NO_FILE), {
    'cloud.provider': 'gcp', 'cloud.platform': 'gcp_kubernetes_engine', 'cloud.account.id': 'acme-prod',
  })
})

t.test('Azure: App Service and Functions', async (t) => {
  const owner = '0b8f1a2c-3d4e-4f50-8a6b-7c8d9e0f1a2b+proxy-rg-WestEuropewebspace'
  t.same(cloudAttributes({ WEBSITE_SITE_NAME: 'proxy', REGION_NAME: 'West Europe', WEBSITE_OWNER_NAME: owner }, NO_FILE), {
    'cloud.provider': 'azure', 'cloud.platform': 'azure_app_service', 'cloud.region': 'West Europe', 'cloud.account.id': '0b8f1a2c-3d4e-4f50-8a6b-7c8d9e0f1a2b',
  })
  t.same(cloudAttributes({ WEBSITE_SITE_NAME: 'fnapp', FUNCTIONS_EXTENSION_VERSION: '~4' }, NO_FILE), {
    'cloud.provider': 'azure', 'cloud.platform': 'azure_functions', 'faas.name': 'fnapp',
  })
})

t.test('Kubernetes: pod name from HOSTNAME, namespace from the service account file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'k8s-ns-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'namespace')
  await writeFile(file, 'registry\n')
  t.same(cloudAttributes({ KUBERNETES_SERVICE_HOST: '10.96.0.1', HOSTNAME: 'proxy-0' }, file), { 'k8s.pod.name': 'proxy-0', 'k8s.namespace.name': 'registry' }, 'no cloud: Kubernetes alone')
  t.same(cloudAttributes({ HOSTNAME: 'proxy-0' }, file), {}, 'not in Kubernetes: neither is read')
})

t.test('the detector answers synchronously: nothing is awaited at boot', async (t) => {
  const result = cloudDetector({ K_SERVICE: 'proxy' }, NO_FILE).detect()
  t.notOk('then' in result, 'not a promise')
  t.same(result.attributes, { 'cloud.provider': 'gcp', 'cloud.platform': 'gcp_cloud_run', 'faas.name': 'proxy' })
})
