package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/views"

	"github.com/jmoiron/sqlx"
	openapi_types "github.com/oapi-codegen/runtime/types"
)

// Orgs implements organizations, their users and invitations.
type Orgs struct{ *Handlers }

func (o *Orgs) orgOut(ctx context.Context, org *store.Organization, detail bool) (api.Organization, error) {
	p := planOf(org.PlanTier)
	out := api.Organization{
		Id: org.ID, Name: org.Name, Slug: org.Slug, Description: org.Description, LogoUrl: org.LogoURL, Website: org.Website,
		Industry: org.Industry, Size: org.Size, CreatedAt: org.CreatedAt, UpdatedAt: org.UpdatedAt,
		UserRole: api.MemberRole(org.Role), UserCount: org.UserCount, ProjectCount: org.ProjectCount,
		Plan: api.Plan{Name: p.Name, Tier: api.PlanTier(p.Tier)},
	}
	if !detail {
		return out, nil
	}
	out.Plan.PriceMonthly = ptr(float32(p.PriceMonthly))
	out.Plan.BillingCycle = ptr(api.PlanBillingCycle(org.BillingCycle))
	if d := nextBillingDate(p, org.BillingCycle, org.PlanSince, o.Now()); d != nil {
		out.Plan.NextBillingDate = &openapi_types.Date{Time: *d}
	}
	settings, err := o.settingsOut(org)
	if err != nil {
		return out, err
	}
	out.Settings = &settings
	f, err := o.usageFigures(ctx, o.Store.DB, org)
	if err != nil {
		return out, err
	}
	usage := struct {
		Projects api.UsageCount `json:"projects"`
		Queries  struct {
			LimitMonthly int `json:"limit_monthly"`
			ThisMonth    int `json:"this_month"`
		} `json:"queries"`
		Storage struct {
			LimitBytes int64 `json:"limit_bytes"`
			UsedBytes  int64 `json:"used_bytes"`
		} `json:"storage"`
		Users api.UsageCount `json:"users"`
	}{}
	usage.Users = api.UsageCount{Count: f.Seats, Limit: p.Users}
	usage.Projects = api.UsageCount{Count: org.ProjectCount, Limit: p.Projects}
	usage.Storage.LimitBytes, usage.Storage.UsedBytes = p.StorageBytes, f.StorageBytes
	usage.Queries.LimitMonthly, usage.Queries.ThisMonth = p.QueriesMonthly, int(f.Month.Queries)
	out.Usage = &usage
	return out, nil
}

func (o *Orgs) ListOrganizations(ctx context.Context, req api.ListOrganizationsRequestObject) (api.ListOrganizationsResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	orgs, total, err := store.ListOrganizations(ctx, o.Store.DB, p.UserID, string(deref(req.Params.Role)), limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListOrganizations200JSONResponse{Organizations: []api.Organization{}, Pagination: paginate(ctx, pg, limit, total)}
	for i := range orgs {
		x, err := o.orgOut(ctx, &orgs[i], false)
		if err != nil {
			return nil, err
		}
		out.Organizations = append(out.Organizations, x)
	}
	return out, nil
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// slugFrom derives a URL name from a name; one shorter than three characters gets the
// kind ("org", "team") appended.
func slugFrom(name, kind string) string {
	s := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(name), "-"), "-")
	if len(s) > 50 {
		s = strings.TrimRight(s[:50], "-")
	}
	if len(s) < 3 {
		s = strings.TrimLeft(s+"-"+kind, "-")
	}
	return s
}

// freeSlug is base, or base with a random suffix while taken says it is someone else's.
func freeSlug(base string, taken func(string) (bool, error)) (string, error) {
	slug := base
	for {
		t, err := taken(slug)
		if err != nil || !t {
			return slug, err
		}
		slug = base + "-" + store.NewID("x")[2:7]
	}
}

func (o *Orgs) CreateOrganization(ctx context.Context, req api.CreateOrganizationRequestObject) (api.CreateOrganizationResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if p.KeyID != "" {
		return nil, apierr.Forbidden("organizations are created by a signed-in user, not with an API key")
	}
	b := req.Body
	now := o.Now()
	org := &store.Organization{ID: store.NewID("org"), Name: b.Name, Description: b.Description, Website: b.Website,
		Industry: b.Industry, PlanTier: "free", BillingCycle: "monthly", PlanSince: now, CreatedAt: now, UpdatedAt: now, Role: "owner", UserCount: 1}
	if b.Size != nil {
		org.Size = ptr(string(*b.Size))
	}
	var owner *store.User
	err = o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if owner, err = store.UserByID(ctx, tx, p.UserID); err != nil {
			return err
		}
		if b.Slug != nil {
			org.Slug = *b.Slug
		} else if org.Slug, err = freeSlug(slugFrom(b.Name, "org"), func(s string) (bool, error) { return store.SlugTaken(ctx, tx, s) }); err != nil {
			return err
		}
		if err := store.CreateOrganization(ctx, tx, org, p.UserID); err != nil {
			return conflictOn(err, "slug", "the slug "+org.Slug+" is already taken")
		}
		if err := o.audit(ctx, tx, org.ID, "organization.create", "organization", org.ID, org.Name, map[string]any{"slug": org.Slug}); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "organization.created", org.ID, map[string]any{"id": org.ID, "name": org.Name, "slug": org.Slug, "owner_id": p.UserID}, now)
	})
	if err != nil {
		return nil, err
	}
	out, err := o.orgOut(ctx, org, true)
	if err != nil {
		return nil, err
	}
	resp := api.CreateOrganization201JSONResponse{Body: out, Headers: api.CreateOrganization201ResponseHeaders{Location: "/api/v1/organizations/" + org.ID}}
	resp.Body.Owner = &struct {
		Email string     `json:"email"`
		Id    api.UserId `json:"id"`
		Name  string     `json:"name"`
	}{owner.Email, owner.ID, owner.Name}
	return resp, nil
}

func (o *Orgs) GetOrganization(ctx context.Context, req api.GetOrganizationRequestObject) (api.GetOrganizationResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	org, err := store.OrganizationForUser(ctx, o.Store.DB, req.OrganizationId, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("organization", req.OrganizationId)
	} else if err != nil {
		return nil, err
	}
	if err := o.Gate(ctx, org.ID); err != nil {
		return nil, err
	}
	if err := auth.AccessFor(p, org.ID, org.Role).Need("datasets:list"); err != nil {
		return nil, err
	}
	out, err := o.orgOut(ctx, org, true)
	if err != nil {
		return nil, err
	}
	return api.GetOrganization200JSONResponse(out), nil
}

func (o *Orgs) UpdateOrganization(ctx context.Context, req api.UpdateOrganizationRequestObject) (api.UpdateOrganizationResponseObject, error) {
	var org *store.Organization
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, acc, err := o.access(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		if err := acc.NeedRole("admin"); err != nil {
			return err
		}
		if err := acc.Need("organizations:manage"); err != nil {
			return err
		}
		if err := store.LockOrganization(ctx, tx, req.OrganizationId); err != nil {
			return err
		}
		if org, err = store.OrganizationForUser(ctx, tx, req.OrganizationId, p.UserID); err != nil {
			return err
		}
		b := req.Body
		changed := map[string]any{}
		patchText(changed, "name", b.Name, &org.Name)
		patchText(changed, "description", b.Description, &org.Description)
		patchText(changed, "website", b.Website, &org.Website)
		patchText(changed, "logo_url", b.LogoUrl, &org.LogoURL)
		org.UpdatedAt = o.Now()
		if err := store.UpdateOrganization(ctx, tx, org); err != nil {
			return err
		}
		if err := o.audit(ctx, tx, org.ID, "organization.update", "organization", org.ID, org.Name, map[string]any{"changes": changed}); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "organization.updated", org.ID, map[string]any{"id": org.ID, "changes": changed}, org.UpdatedAt)
	})
	if err != nil {
		return nil, err
	}
	out, err := o.orgOut(ctx, org, true)
	if err != nil {
		return nil, err
	}
	return api.UpdateOrganization200JSONResponse(out), nil
}

func (o *Orgs) DeleteOrganization(ctx context.Context, req api.DeleteOrganizationRequestObject) (api.DeleteOrganizationResponseObject, error) {
	var out api.DeleteOrganization200JSONResponse
	var files []string
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, acc, err := o.access(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		if err := acc.NeedRole("owner"); err != nil {
			return err
		}
		if err := acc.Need("organizations:delete"); err != nil {
			return err
		}
		org, err := store.OrganizationForUser(ctx, tx, req.OrganizationId, p.UserID)
		if err != nil {
			return err
		}
		b := req.Body
		if b.Confirmation != org.Slug {
			return apierr.Field("body.confirmation", "mismatch", "confirmation must equal the organization's slug ("+org.Slug+")")
		}
		target := deref(b.TransferTo)
		if target == org.ID {
			return apierr.Field("body.transfer_to", "invalid", "transfer_to must be another organization")
		}
		if target != "" {
			_, tacc, err := o.access(ctx, tx, target)
			if err != nil {
				var ae *apierr.Error
				if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
					return apierr.Field("body.transfer_to", "not_found", "no organization "+target+" where you are a member")
				}
				return err
			}
			if err := tacc.NeedRole("admin"); err != nil {
				return err
			}
			if err := store.LockOrganization(ctx, tx, target); err != nil {
				return err
			}
			// The receiving organization's plan must allow the projects it receives.
			to, err := store.OrganizationForUser(ctx, tx, target, p.UserID)
			if err != nil {
				return err
			}
			if tp := planOf(to.PlanTier); to.ProjectCount+org.ProjectCount > tp.Projects {
				return tp.limitExceeded("projects", int64(to.ProjectCount+org.ProjectCount), int64(tp.Projects),
					fmt.Sprintf("of the receiving organization allows %d projects; it has %d and would receive %d", tp.Projects, to.ProjectCount, org.ProjectCount))
			}
		}
		now := o.Now()
		if target == "" { // nothing moves: the data of every dataset goes
			if files, err = o.dropDatasetData(ctx, tx, "organization", org.ID); err != nil {
				return err
			}
			if err := datasets.DropOrganization(ctx, tx, org.ID); err != nil {
				return err
			}
		} else if err := datasets.MoveOrganization(ctx, tx, org.ID, target, now); err != nil {
			return err
		}
		moved, deleted, err := store.DeleteOrganization(ctx, tx, org.ID, target, now)
		if err != nil {
			return err
		}
		if target != "" { // the views' kept text names the schema they moved into
			if err := views.Moved(ctx, tx, target); err != nil {
				return err
			}
		}
		details := map[string]any{"slug": org.Slug, "reason": deref(b.Reason), "transfer_to": target, "projects_transferred": moved, "projects_deleted": deleted}
		if err := o.audit(ctx, tx, org.ID, "organization.delete", "organization", org.ID, org.Name, details); err != nil {
			return err
		}
		if target != "" {
			if err := o.audit(ctx, tx, target, "organization.receive_projects", "organization", target, "", map[string]any{"from": org.ID, "projects": moved}); err != nil {
				return err
			}
		}
		out = api.DeleteOrganization200JSONResponse{Message: "organization " + org.Slug + " deleted", DeletedAt: now,
			ProjectsTransferred: moved, ProjectsDeleted: deleted}
		if target != "" {
			out.TransferredTo = &target
		}
		return store.Emit(ctx, tx, "organization.deleted", org.ID, map[string]any{"id": org.ID, "slug": org.Slug, "transfer_to": target}, now)
	})
	if err != nil {
		return nil, err
	}
	o.removeFiles(files)
	return out, nil
}
