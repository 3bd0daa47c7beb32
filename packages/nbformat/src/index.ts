/**
 * Python-compatible notebook files: read and write `.ipynb` exactly as Jupyter Server does with
 * nbformat, including Python's number types, line splitting and validation messages.
 */
export { PyNumber, pythonFloatRepr, pythonTruthy } from './pynumber';
export { PythonException } from './exception';
export { type DumpOptions, dumpsPython, isPlainObject, parsePythonJson } from './json';
export {
  type ReprOptions,
  compareCodePoints,
  pythonPrettyFormat,
  pythonRepr,
  pythonSplitLines,
  pythonStr
} from './repr';
export { stringifyPythonNumbers } from './stringify';
export {
  type INotebookFacts,
  type NotebookNode,
  type NotebookOptions,
  type NotebookParseReason,
  type ReadNotebookOptions,
  type ReadNotebookResult,
  type SerializedNotebook,
  NotebookParseError,
  NotebookWriteError,
  newNotebook,
  randomCellId,
  readNotebook,
  serializeNotebook,
  validateNotebook,
  writeNotebook
} from './notebook';
export {
  type CellIdGenerator,
  type IValidationError,
  VALIDATION_MESSAGE_PREFIX,
  prepareValidation
} from './validate';
