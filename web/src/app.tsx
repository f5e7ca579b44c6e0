import { useEffect, useState } from 'preact/hooks'
import { ErrorBoundary, LocationProvider, Route, Router, lazy, useLocation } from 'preact-iso'
import { AppShell } from './layout/app-shell'
import { PublicLayout } from './layout/public-layout'
import { describeError, loginPath, navigateTo, refreshSession, connectRouter, type ApiProblem } from './lib/api'
import { sessionStatus } from './lib/session'
import { ErrorAlert, Spinner } from './ui'

// Every screen is its own chunk, loaded when first opened, so that the first page stays small.
const LoginPage = lazy(() => import('./screens/auth/login').then((m) => m.LoginPage))
const SignupPage = lazy(() => import('./screens/auth/signup').then((m) => m.SignupPage))
const VerifyEmailPage = lazy(() => import('./screens/auth/verify-email').then((m) => m.VerifyEmailPage))
const ForgotPasswordPage = lazy(() => import('./screens/auth/forgot-password').then((m) => m.ForgotPasswordPage))
const ResetPasswordPage = lazy(() => import('./screens/auth/reset-password').then((m) => m.ResetPasswordPage))
const InvitePage = lazy(() => import('./screens/auth/invite').then((m) => m.InvitePage))
const AccountPage = lazy(() => import('./screens/account').then((m) => m.AccountPage))
const OverviewPage = lazy(() => import('./screens/overview').then((m) => m.OverviewPage))
const NewOrganizationPage = lazy(() => import('./screens/organizations/new-organization').then((m) => m.NewOrganizationPage))
const MembersPage = lazy(() => import('./screens/members').then((m) => m.MembersPage))
const ProjectsPage = lazy(() => import('./screens/projects').then((m) => m.ProjectsPage))
const ProjectPage = lazy(() => import('./screens/projects/project').then((m) => m.ProjectPage))
const KeysPage = lazy(() => import('./screens/keys').then((m) => m.KeysPage))
const UsagePage = lazy(() => import('./screens/usage').then((m) => m.UsagePage))
const AuditPage = lazy(() => import('./screens/audit').then((m) => m.AuditPage))
const ModelsPage = lazy(() => import('./screens/models').then((m) => m.ModelsPage))
const ModelPage = lazy(() => import('./screens/models').then((m) => m.ModelPage))
const PlaygroundPage = lazy(() => import('./screens/playground').then((m) => m.PlaygroundPage))
const AdminOrganizationsPage = lazy(() => import('./screens/admin').then((m) => m.AdminOrganizationsPage))
const AdminOrganizationPage = lazy(() => import('./screens/admin').then((m) => m.AdminOrganizationPage))
const AdminUsersPage = lazy(() => import('./screens/admin').then((m) => m.AdminUsersPage))
const AdminModelsPage = lazy(() => import('./screens/admin').then((m) => m.AdminModelsPage))
const AdminDeploymentsPage = lazy(() => import('./screens/admin').then((m) => m.AdminDeploymentsPage))
const NotFoundPage = lazy(() => import('./screens/not-found').then((m) => m.NotFoundPage))

/** Pages for people who are not signed in (yet): no shell, no session needed. */
const publicPaths = ['/login', '/signup', '/verify-email', '/forgot-password', '/reset-password', '/invite']

function PublicPages() {
  return (
    <PublicLayout>
      <ErrorBoundary>
        <Router>
          <Route path="/login" component={LoginPage} />
          <Route path="/signup" component={SignupPage} />
          <Route path="/verify-email" component={VerifyEmailPage} />
          <Route path="/forgot-password" component={ForgotPasswordPage} />
          <Route path="/reset-password" component={ResetPasswordPage} />
          <Route path="/invite" component={InvitePage} />
          <Route default component={NotFoundPage} />
        </Router>
      </ErrorBoundary>
    </PublicLayout>
  )
}

function SignedInPages() {
  return (
    <AppShell>
      <ErrorBoundary>
        <Router>
          <Route path="/" component={OverviewPage} />
          <Route path="/account" component={AccountPage} />
          <Route path="/organizations/new" component={NewOrganizationPage} />
          <Route path="/members" component={MembersPage} />
          <Route path="/projects" component={ProjectsPage} />
          <Route path="/projects/:id" component={ProjectPage} />
          <Route path="/keys" component={KeysPage} />
          <Route path="/usage" component={UsagePage} />
          <Route path="/audit" component={AuditPage} />
          <Route path="/models" component={ModelsPage} />
          <Route path="/models/:id+" component={ModelPage} />
          <Route path="/playground" component={PlaygroundPage} />
          <Route path="/admin/organizations" component={AdminOrganizationsPage} />
          <Route path="/admin/organizations/:id" component={AdminOrganizationPage} />
          <Route path="/admin/users" component={AdminUsersPage} />
          <Route path="/admin/models" component={AdminModelsPage} />
          <Route path="/admin/deployments" component={AdminDeploymentsPage} />
          <Route default component={NotFoundPage} />
        </Router>
      </ErrorBoundary>
    </AppShell>
  )
}

function Pages() {
  const { path, route } = useLocation()
  const [bootProblem, setBootProblem] = useState<ApiProblem | null>(null)
  connectRouter(route)

  const checkSession = () => {
    setBootProblem(null)
    refreshSession().catch((error) => setBootProblem(describeError(error)))
  }
  useEffect(checkSession, [])

  const status = sessionStatus.value
  useEffect(() => {
    if (status === 'signed-out' && !publicPaths.includes(path)) navigateTo(loginPath(), true)
  }, [status, path])

  if (publicPaths.includes(path)) return <PublicPages />
  if (status === 'signed-in') return <SignedInPages />
  return (
    <PublicLayout>
      {bootProblem ? <ErrorAlert problem={bootProblem} onRetry={checkSession} /> : <Spinner label="Loading nilegate…" />}
    </PublicLayout>
  )
}

/** The dashboard: the router, and the session that decides between the sign-in pages and the rest. */
export function App() {
  return (
    <LocationProvider>
      <Pages />
    </LocationProvider>
  )
}
