// The operator's pages: a chunk of their own, loaded when an operator first opens one, so a client
// business's session (most of them) does not download what it can never use.
export { Accounts, AccountPage } from './admin';
export { ExperiencePage, Experiences } from './experiences';
