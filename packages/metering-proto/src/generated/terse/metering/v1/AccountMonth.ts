// Original file: ../../proto/terse/metering/v1/metering.proto

import type { Long } from '@grpc/proto-loader';

export interface AccountMonth {
  'account_id'?: (string);
  'month'?: (string);
  'tokens'?: (number | string | Long);
  'limit'?: (number | string | Long);
  'exceeded'?: (boolean);
}

export interface AccountMonth__Output {
  'account_id': (string);
  'month': (string);
  'tokens': (number);
  'limit': (number);
  'exceeded': (boolean);
}
