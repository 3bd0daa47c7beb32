export * from './app';
export * from './contents';
// HttpError only as a type: errors are raised through the catalogue's named constructors.
export { hasErrorCode, type HttpError } from './errors';
export {
  type ErrorCatalogue,
  errorCatalogue,
  httpErrors,
  isCatalogued,
  listErrors,
  type ErrorName
} from './http/errorCatalogue';
