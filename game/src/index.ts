// @ricochet/game: the optional game layer above the Ricochet transport.
// Depends on nothing, the transport included: import what you use.
export { BitReader, BitWriter, DecodeError, type DecodeErrorCode } from './bits.js';
export { Quantizer, decodeAngle, encodeAngle } from './quantize.js';
export { SnapshotBuffer, lerp, lerpAngle, lerpById, type SnapshotBufferOptions } from './interpolation.js';
export { Predictor, seqNewer, type PredictorOptions } from './prediction.js';
export {
  aligned,
  angle,
  array,
  bool,
  defineMessages,
  int,
  quantized,
  string,
  struct,
  uint,
  type ArrayOptions,
  type Field,
  type Fields,
  type Infer,
  type InferFields,
  type MessageDef,
  type MessageOf,
  type MessageUnion,
  type Schema,
} from './schema.js';
