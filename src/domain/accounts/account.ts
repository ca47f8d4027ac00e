/** A tenant: everything the API keeps belongs to one account (the accounts repository maps rows to it). */
export interface Account {
  id: string;
  name: string;
  /** The operator's account: its clients may hold the `admin` scope; it cannot be deactivated. */
  isOperator: boolean;
  /** false: its clients can no longer obtain tokens, and its tokens are refused. */
  active: boolean;
  createdAt: number;
}
