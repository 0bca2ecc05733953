/**
 * The methods a route is registered under, in uWebSockets.js's spelling
 * (`del` for DELETE, `any` for every method); both listeners (the uWS front
 * door and the node:http compat listener) take the same names.
 */
export type Method = 'get' | 'head' | 'put' | 'post' | 'del' | 'patch' | 'options' | 'any'
