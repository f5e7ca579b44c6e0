import { InProcessAdmissionStore } from '../../../server/adapters/in-process/admission-store'
import { describeAdmissionStore } from '../../support/admission-conformance'

describeAdmissionStore('InProcessAdmissionStore', async () => {
  const store = new InProcessAdmissionStore()
  return { stores: [store, store], close: async () => {} }
})
