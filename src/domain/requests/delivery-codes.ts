import { randomBytes } from 'node:crypto';
import { newId } from '../ids.js';

const COUPON_ALPHABET = '23456789ABCDEFGHJKLMNPQRSTUVWXYZ'; // no 0/O or 1/I: codes are typed by people

/** `XXXX-XXXX-XXXX`: 60 random bits, unambiguous characters. */
function generateCouponCode(): string {
  const bytes = randomBytes(12);
  let code = '';
  for (let i = 0; i < 12; i++) {
    if (i > 0 && i % 4 === 0) code += '-';
    code += COUPON_ALPHABET[bytes[i]! & 31];
  }
  return code;
}

function generatePaymentId(): string {
  return newId('pay');
}

export const randomDeliveryCodes = { coupon: generateCouponCode, paymentId: generatePaymentId };
