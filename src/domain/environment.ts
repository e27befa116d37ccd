// An App's environment: development Apps keep metadata on the service's own storage, production Apps
// on IPFS. Chosen when the App is created.
export type AppEnvironment = 'development' | 'production';
