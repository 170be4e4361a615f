import { Catch, type RpcExceptionFilter } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';

/**
 * Hands a job handler's error to the transport as it was thrown, so that BullMQ retries, delays
 * or fails the job by it. Nest's default RPC filter would log it and replace it with
 * "Internal server error".
 */
@Catch()
export class JobErrorFilter implements RpcExceptionFilter<unknown> {
  catch(exception: unknown): Observable<never> {
    return throwError(() => exception);
  }
}
