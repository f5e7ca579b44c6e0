/** The gateway's password rule (signup, change and reset): 8 to 200 characters. */
export function passwordProblem(password: string): string | undefined {
  if (password.length < 8) return 'Use at least 8 characters.'
  if (password.length > 200) return 'Use at most 200 characters.'
  return undefined
}

/** Whether `email` looks like an address worth sending (the server decides for good). */
export function emailProblem(email: string): string | undefined {
  if (email.trim() === '') return 'Enter your e-mail address.'
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email.trim())) return 'Enter an e-mail address like name@example.com.'
  return undefined
}
