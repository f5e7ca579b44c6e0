import { accountApi, navigateTo, refreshSession } from '../../lib/api'
import { selectOrganization } from '../../lib/session'
import { Button, Form, PageHeader, TextField, useForm } from '../../ui'

/** /organizations/new: an organization owned by the signed-in user, then acted on at once. */
export function NewOrganizationPage() {
  const form = useForm({
    initial: { name: '' },
    validate: (values) => ({
      name: values.name.trim() === '' ? 'Give the organization a name.' : values.name.trim().length > 200 ? 'Use at most 200 characters.' : undefined,
    }),
    submit: async (values) => {
      const organization = await accountApi().organizations.create({ name: values.name.trim() })
      await refreshSession()
      selectOrganization(organization.id)
      navigateTo('/')
    },
  })

  return (
    <div>
      <PageHeader title="New organization" description="You become its owner. Projects, keys, members and credit belong to an organization." />
      <Form state={form} label="New organization">
        <TextField label="Organization name" required autocomplete="organization" {...form.text('name')} error={form.errors.name} />
        <div class="form-actions">
          <Button type="submit" variant="primary" busy={form.submitting}>
            Create organization
          </Button>
        </div>
      </Form>
    </div>
  )
}
