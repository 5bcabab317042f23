// Placeholder: the live demo (`npm start`) is written with the real SDK API.
import { protocolVersion } from '@ricochet/sdk';

console.log(`Ricochet live demo: TODO (SDK loaded, protocol version ${protocolVersion()})`);
