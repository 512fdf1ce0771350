package handlers

import (
	"context"
	"errors"

	"dataplatform/handlers/auth"
	"dataplatform/handlers/settings"
	"dataplatform/store"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
)

// Bootstrap creates the first owner, an organization and a project when no user exists. Without
// DP_ADMIN_EMAIL/DP_ADMIN_PASSWORD it uses settings.DefaultAdminEmail and a random password, which it
// logs once.
func (h *Handlers) Bootstrap(ctx context.Context) error {
	return h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if needed, err := store.BootstrapNeeded(ctx, tx); err != nil || !needed {
			return err
		}
		email, password, generated := h.Config.AdminEmail, h.Config.AdminPassword, false
		if email == "" {
			email = settings.DefaultAdminEmail
		}
		if password == "" {
			password, generated = secrets.NewToken()[:20], true
		} else if _, why := auth.WeakPassword(password, email, "Administrator"); why != "" {
			return errors.New("DP_ADMIN_PASSWORD: " + why)
		}
		hash, err := h.Passwords.Hash(password)
		if err != nil {
			return err
		}
		now := h.Now()
		// The operator chose this address (DP_ADMIN_EMAIL): it counts as verified.
		u := &store.User{ID: store.NewID("usr"), Email: email, Name: "Administrator", PasswordHash: &hash, Status: "active", CreatedAt: now, UpdatedAt: now,
			EmailVerifiedAt: &now}
		if err := store.CreateUser(ctx, tx, u); err != nil {
			return err
		}
		org := &store.Organization{ID: store.NewID("org"), Name: "Default organization", Slug: "default", PlanTier: "free", CreatedAt: now, UpdatedAt: now}
		if err := store.CreateOrganization(ctx, tx, org, u.ID); err != nil {
			return err
		}
		prj := &store.Project{ID: store.NewID("prj"), OrgID: org.ID, Name: "Default project", CreatedBy: &u.ID, CreatedAt: now, UpdatedAt: now}
		if err := store.CreateProject(ctx, tx, prj); err != nil {
			return err
		}
		actx := auth.WithPrincipal(ctx, &auth.Principal{UserID: u.ID, Email: u.Email})
		if err := h.audit(actx, tx, org.ID, "system.bootstrap", "organization", org.ID, org.Name,
			map[string]any{"user_id": u.ID, "project_id": prj.ID}); err != nil {
			return err
		}
		if err := store.Emit(ctx, tx, "organization.created", org.ID, map[string]any{"id": org.ID, "name": org.Name, "slug": org.Slug, "owner_id": u.ID}, now); err != nil {
			return err
		}
		if generated {
			h.Log.Warn("created the first owner with a generated password; it is shown only this once",
				"email", email, "password", password, "organization_id", org.ID, "project_id", prj.ID)
		} else {
			h.Log.Info("created the first owner", "email", email, "organization_id", org.ID, "project_id", prj.ID)
		}
		return nil
	})
}
