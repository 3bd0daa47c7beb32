/**
 * Python-compatible notebook files: read and write `.ipynb` exactly as Jupyter Server does with
 * nbformat, including Python's number types, line splitting and validation messages.
 */
export { PyNumber, pythonFloatRepr, pythonStr } from './pynumber';
export {
  type DumpOptions,
  PythonException,
  compareCodePoints,
  dumpsPython,
  parsePythonJson,
  pythonRepr,
  pythonSplitLines
} from './pyjson';
export {
  type NotebookNode,
  type NotebookOptions,
  type NotebookParseReason,
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
  VALIDATION_MESSAGE_PREFIX,
  prepareValidation,
  pythonPrettyFormat
} from './validate';
