// Packages of the XMPP stack that ship no type declarations (the ones used here are typed where they are used).
declare module "sasl-scram-sha-1";
declare module "sasl-plain";
declare module "saslmechanisms";
declare module "@xmpp/websocket";
declare module "@xmpp/sasl-plain";
declare module "@xmpp/tcp";
declare module "@xmpp/starttls";
