/** Process exit codes (SPEC.md 7.2). */
export const EXIT = Object.freeze({
  /** Graceful shutdown; the drain completed. */
  OK: 0,
  /** A service exited abnormally; the last `service: service exited:` stderr line has the detail. */
  ABNORMAL: 1,
  /** Boot aborted; every problem was reported. */
  BOOT_ABORTED: 2,
  /** Cancelled from outside by a kill that bypassed the graceful path (also a second signal during the drain). */
  CANCELLED: 3,
  /** Local-development halt: Ctrl-D on an interactive terminal. */
  LOCAL_HALT: 130,
})

/** Prefix of the stderr line that carries an abnormal exit's detail (SPEC.md 6.2). */
export const SERVICE_EXITED = 'service: service exited:'
