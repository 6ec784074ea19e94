// swagger-ui-dist ships no types; this is the part of its options the reference passes (see main.ts).
declare module "swagger-ui-dist/swagger-ui-es-bundle.js" {
  interface SwaggerRequest {
    url: string;
    headers: Record<string, string>;
    userFetch?: (url: string, init: RequestInit) => Promise<Response>;
  }
  const SwaggerUI: (options: {
    domNode: HTMLElement;
    spec: object;
    deepLinking?: boolean;
    validatorUrl?: string | null;
    queryConfigEnabled?: boolean;
    displayRequestDuration?: boolean;
    requestInterceptor?: (request: SwaggerRequest) => SwaggerRequest | Promise<SwaggerRequest>;
  }) => unknown;
  export default SwaggerUI;
}
