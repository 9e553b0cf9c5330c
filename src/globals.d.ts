/** The site build's label (vite.config.ts: SPARRING_BUILD_ID, else the package version): shown in the Device dialog. */
declare const __SPARRING_BUILD__: string;
