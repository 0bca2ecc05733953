/**
 * What the pool's task modules share: the gate module each thread imports
 * once, the charge request a task sends the main thread before it renders,
 * and the error shape that crosses back.
 */
import type { MessagePort } from 'node:worker_threads'
import { isServiceError, ServiceError } from '../engine/errors.js'
import type { ChargeReply, ChargeRequest, GateFactory, SerializedError } from './packument-messages.js'

/** Gate modules already imported by this thread, by URL. */
const gateModules = new Map<string, Promise<GateFactory>>()

export function loadGate(url: string): Promise<GateFactory> {
  let factory = gateModules.get(url)
  if (factory === undefined) {
    factory = import(url).then((module: { createDecide?: unknown }) => {
      if (typeof module.createDecide !== 'function') {
        throw new ServiceError('INTERNAL', { message: 'the gate module exports no createDecide function' })
      }
      return module.createDecide as GateFactory
    })
    gateModules.set(url, factory)
  }
  return factory
}

/** Asks the main thread for `bytes` of the memory budget and waits for its answer. */
export function charge(port: MessagePort, bytes: number, basisBytes: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    port.once('message', (reply: ChargeReply) => {
      if (reply.type === 'granted') resolve()
      else reject(new ServiceError(reply.code))
    })
    const request: ChargeRequest = { type: 'charge', bytes, basisBytes }
    port.postMessage(request)
  })
}

export function serialize(error: unknown): SerializedError {
  const e = isServiceError(error) ? error : new ServiceError('INTERNAL', { cause: error })
  return { code: e.code, message: e.message, data: e.data, retryAfter: e.retryAfter }
}
