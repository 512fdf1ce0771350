package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

func orgUserOut(u *store.OrgUser) api.OrganizationUser {
	return api.OrganizationUser{Id: u.ID, Name: u.Name, Email: u.Email, AvatarUrl: u.AvatarURL, Role: api.MemberRole(u.Role),
		Status: api.OrganizationUserStatus(u.Status), JoinedAt: u.JoinedAt, LastActiveAt: u.LastActiveAt,
		TwoFactorEnabled: u.TwoFactorEnabled, Teams: []api.UserTeam{}}
}

// manager checks that the caller administers users of the organization: organization role
// admin and, for API keys, the users:manage permission.
func (o *Orgs) manager(ctx context.Context, tx *sqlx.Tx, orgID string) (*auth.Principal, auth.Access, error) {
	p, acc, err := o.access(ctx, tx, orgID)
	if err != nil {
		return nil, acc, err
	}
	return p, acc, managesUsers(acc)
}

// managesUsers refuses a caller who is not an organization admin with users:manage.
func managesUsers(acc auth.Access) error {
	if err := acc.NeedRole("admin"); err != nil {
		return err
	}
	return acc.Need("users:manage")
}

func (o *Orgs) ListOrganizationUsers(ctx context.Context, req api.ListOrganizationUsersRequestObject) (api.ListOrganizationUsersResponseObject, error) {
	_, acc, err := o.access(ctx, o.Store.DB, req.OrganizationId)
	if err != nil {
		return nil, err
	}
	if err := acc.Need("datasets:list"); err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	out := api.ListOrganizationUsers200JSONResponse{Users: []api.OrganizationUser{}}
	f := store.UserFilter{Search: deref(req.Params.Search), Role: string(deref(req.Params.Role)), Status: string(deref(req.Params.Status)),
		Team: deref(req.Params.TeamId)}
	users, total, err := store.ListOrgUsers(ctx, o.Store.DB, req.OrganizationId, f, limit, offset)
	if err != nil {
		return nil, err
	}
	for i := range users {
		out.Users = append(out.Users, orgUserOut(&users[i]))
	}
	if err := o.userTeams(ctx, o.Store.DB, req.OrganizationId, out.Users); err != nil {
		return nil, err
	}
	out.Pagination = paginate(ctx, pg, limit, total)
	return out, nil
}

func (o *Orgs) UpdateOrganizationUser(ctx context.Context, req api.UpdateOrganizationUserRequestObject) (api.UpdateOrganizationUserResponseObject, error) {
	var out *store.OrgUser
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		_, acc, err := o.manager(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		target, err := o.lockedMember(ctx, tx, req.OrganizationId, req.UserId)
		if err != nil {
			return err
		}
		role := string(req.Body.Role)
		if role == "owner" || target.Role == "owner" {
			if err := acc.NeedRole("owner"); err != nil {
				return err
			}
		}
		if target.Role == "owner" && role != "owner" && target.Status == "active" {
			if err := o.keepAnOwner(ctx, tx, req.OrganizationId); err != nil {
				return err
			}
		}
		if err := store.SetMemberRole(ctx, tx, req.OrganizationId, req.UserId, role); err != nil {
			return err
		}
		if err := o.audit(ctx, tx, req.OrganizationId, "user.role_change", "user", target.ID, target.Name,
			map[string]any{"from": target.Role, "to": role}); err != nil {
			return err
		}
		target.Role = role
		out = target
		return nil
	})
	if err != nil {
		return nil, err
	}
	u := []api.OrganizationUser{orgUserOut(out)}
	if err := o.userTeams(ctx, o.Store.DB, req.OrganizationId, u); err != nil {
		return nil, err
	}
	return api.UpdateOrganizationUser200JSONResponse(u[0]), nil
}

// lockedMember locks the organization (role and removal checks must not race) and loads one
// of its users.
func (o *Orgs) lockedMember(ctx context.Context, tx *sqlx.Tx, orgID, userID string) (*store.OrgUser, error) {
	if err := store.LockOrganization(ctx, tx, orgID); err != nil {
		return nil, err
	}
	u, err := store.OrgUserByID(ctx, tx, orgID, userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("user", userID)
	}
	return u, err
}

// keepAnOwner refuses a change that would leave the organization without an active owner.
func (o *Orgs) keepAnOwner(ctx context.Context, tx *sqlx.Tx, orgID string) error {
	n, err := store.OwnerCount(ctx, tx, orgID)
	if err != nil {
		return err
	}
	if n <= 1 {
		return apierr.Conflict("role", "an organization needs at least one owner: make someone else owner first, or delete the organization")
	}
	return nil
}

func (o *Orgs) RemoveOrganizationUser(ctx context.Context, req api.RemoveOrganizationUserRequestObject) (api.RemoveOrganizationUserResponseObject, error) {
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, acc, err := o.access(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		self := p.UserID == req.UserId && p.KeyID == ""
		if !self {
			if err := acc.NeedRole("admin"); err != nil {
				return err
			}
			if err := acc.Need("users:manage"); err != nil {
				return err
			}
		}
		target, err := o.lockedMember(ctx, tx, req.OrganizationId, req.UserId)
		if err != nil {
			return err
		}
		if target.Role == "owner" && target.Status == "active" {
			if !self {
				if err := acc.NeedRole("owner"); err != nil {
					return err
				}
			}
			if err := o.keepAnOwner(ctx, tx, req.OrganizationId); err != nil {
				return err
			}
		}
		if err := store.RemoveMember(ctx, tx, req.OrganizationId, req.UserId); err != nil {
			return err
		}
		action := "user.remove"
		if self {
			action = "user.leave"
		}
		if err := o.audit(ctx, tx, req.OrganizationId, action, "user", target.ID, target.Name, map[string]any{"role": target.Role, "status": target.Status}); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "user.removed", req.OrganizationId, map[string]any{"organization_id": req.OrganizationId, "user_id": target.ID}, o.Now())
	})
	if err != nil {
		return nil, err
	}
	return api.RemoveOrganizationUser204Response{}, nil
}

func (o *Orgs) CreateInvitation(ctx context.Context, req api.CreateInvitationRequestObject) (api.CreateInvitationResponseObject, error) {
	b := req.Body
	email := strings.TrimSpace(string(b.Email))
	role := ""
	if b.Role != nil {
		role = string(*b.Role)
	}
	days := 7
	if b.ExpiresInDays != nil {
		days = *b.ExpiresInDays
	}
	token := secrets.NewToken()
	now := o.Now()
	inv := &store.Invitation{ID: store.NewID("inv"), OrgID: req.OrganizationId, Email: email, Name: b.Name, Role: role,
		Message: b.Message, TokenHash: secrets.Hash(token), Status: "pending", ExpiresAt: now.Add(time.Duration(days) * 24 * time.Hour), CreatedAt: now,
		DeliveredByEmail: o.Mail != nil, TeamIDs: pq.StringArray{}}
	if b.Teams != nil {
		inv.TeamIDs = pq.StringArray(*b.Teams)
	}
	link := o.Config.BaseURL + "/api/v1/invitations/" + token
	var was store.Invited
	var mail, userName string // the invitation's mail, sent once the transaction is over
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		was = store.Invited{}
		p, _, err := o.manager(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		inv.InvitedBy = &p.UserID
		if err := store.LockOrganization(ctx, tx, req.OrganizationId); err != nil {
			return err
		}
		org, err := store.OrganizationForUser(ctx, tx, req.OrganizationId, p.UserID)
		if err != nil {
			return err
		}
		if role == "" {
			role = o.settings(org).Defaults.UserRole
		}
		if role == "member" { // the organization role member views: the viewer role
			role = "viewer"
		}
		inv.Role = role
		missing, err := store.MissingTeams(ctx, tx, req.OrganizationId, inv.TeamIDs)
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return apierr.Field("body.teams", "unknown_team", "no team "+strings.Join(missing, ", ")+" in this organization")
		}
		u, err := o.invitee(ctx, tx, req.OrganizationId, email, b.Name, now, &was)
		if err != nil {
			return err
		}
		inv.UserID = u.ID
		if err := store.AddMembership(ctx, tx, req.OrganizationId, u.ID, role, "invited", nil, now); err != nil {
			return err
		}
		if was.Revoked, err = store.CreateInvitation(ctx, tx, inv); err != nil {
			return err
		}
		inv.OrgName, userName = org.Name, u.Name
		if !inv.DeliveredByEmail {
			return o.invited(ctx, tx, inv, userName)
		}
		mail = invitationMail(p.Email, org.Name, role, inv, link)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if inv.DeliveredByEmail {
		if err := o.mailInvitation(ctx, inv, was, mail, userName); err != nil {
			return nil, err
		}
	}
	out := api.CreateInvitation201JSONResponse{InvitationId: inv.ID, OrganizationId: inv.OrgID, UserId: &inv.UserID, Email: inv.Email,
		Name: inv.Name, Role: api.MemberRole(inv.Role), Status: api.InvitationStatusPending, ExpiresAt: inv.ExpiresAt,
		Delivery: api.InvitationDeliveryEmail, Teams: inv.TeamIDs, CreatedAt: inv.CreatedAt}
	if !inv.DeliveredByEmail {
		out.Delivery, out.InvitationUrl = api.InvitationDeliveryLink, &link
	}
	return out, nil
}

// invitee is the user an invitation to email is for, created (invited) when there is none,
// once it is known not to be a member already and to fit the plan's seats; was records what
// the invitation changed.
func (o *Orgs) invitee(ctx context.Context, tx *sqlx.Tx, orgID, email string, name *string, now time.Time, was *store.Invited) (*store.User, error) {
	u, err := store.UserByEmail(ctx, tx, email)
	switch {
	case errors.Is(err, store.ErrNotFound):
		name := deref(name)
		if name == "" {
			name, _, _ = strings.Cut(email, "@")
		}
		u = &store.User{ID: store.NewID("usr"), Email: email, Name: name, Status: "invited", CreatedAt: now, UpdatedAt: now}
		if err := store.CreateUser(ctx, tx, u); err != nil {
			return nil, err
		}
		was.UserCreated = true
	case err != nil:
		return nil, err
	}
	existing, err := store.OrgUserByID(ctx, tx, orgID, u.ID)
	if err == nil && existing.Status == "active" {
		return nil, apierr.Conflict("email", email+" is already a member of this organization")
	} else if err == nil {
		was.Before = existing
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	// A new seat, or one an expired invitation gave up: check the plan.
	if held, err := store.HoldsSeat(ctx, tx, orgID, u.ID, now); err != nil {
		return nil, err
	} else if !held {
		if err := o.checkUserLimit(ctx, tx, orgID); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// invitationMail is the text of an invitation's mail. The token goes to the mailbox only, so
// accepting it proves the mailbox.
func invitationMail(from, orgName, role string, inv *store.Invitation, link string) string {
	mail := from + " invites you to join " + orgName + " as " + role + ".\n\n"
	if inv.Message != nil {
		mail += *inv.Message + "\n\n"
	}
	mail += "See the invitation: GET " + link + "\nAccept it: POST " + link + "/accept\nIt expires at " + inv.ExpiresAt.Format(time.RFC3339) + ".\n"
	return mail
}

// mailInvitation mails an invitation after its transaction, which holds the organization's
// lock: a slow mail server must not hold up the organization. A refused mail keeps nothing:
// what the invitation changed is undone, and only then is it announced.
func (o *Orgs) mailInvitation(ctx context.Context, inv *store.Invitation, was store.Invited, mail, userName string) error {
	ctx = context.WithoutCancel(ctx)
	if err := o.mailUser(ctx, inv.Email, "Invitation to "+inv.OrgName, mail); err != nil {
		if werr := o.Store.Tx(ctx, func(tx *sqlx.Tx) error { return store.WithdrawInvitation(ctx, tx, inv, was) }); werr != nil {
			return fmt.Errorf("withdraw invitation %s after its mail failed: %w", inv.ID, werr)
		}
		return err
	}
	return o.Store.Tx(ctx, func(tx *sqlx.Tx) error { return o.invited(ctx, tx, inv, userName) })
}

// invited records a made invitation: its audit row and its event.
func (o *Orgs) invited(ctx context.Context, tx *sqlx.Tx, inv *store.Invitation, userName string) error {
	if err := o.audit(ctx, tx, inv.OrgID, "user.invite", "user", inv.UserID, userName,
		map[string]any{"email": inv.Email, "role": inv.Role, "invitation_id": inv.ID, "expires_at": inv.ExpiresAt}); err != nil {
		return err
	}
	return store.Emit(ctx, tx, "user.invited", inv.OrgID,
		map[string]any{"organization_id": inv.OrgID, "invitation_id": inv.ID, "email": inv.Email, "role": inv.Role}, o.Now())
}

func (o *Orgs) checkUserLimit(ctx context.Context, tx *sqlx.Tx, orgID string) error {
	org, err := store.OrganizationForUser(ctx, tx, orgID, auth.FromContext(ctx).UserID)
	if err != nil {
		return err
	}
	n, err := store.CountMembers(ctx, tx, orgID, o.Now())
	if err != nil {
		return err
	}
	p := planOf(org.PlanTier)
	if n >= p.Users {
		return p.limitExceeded("users", int64(n), int64(p.Users), "allows "+strconv.Itoa(p.Users)+" users (members and pending invitations)")
	}
	return nil
}

// invitation finds a pending, unexpired invitation by its token.
func (o *Orgs) invitation(ctx context.Context, q sqlx.QueryerContext, token string, lock bool) (*store.Invitation, error) {
	inv, err := store.InvitationByToken(ctx, q, secrets.Hash(token), lock)
	if errors.Is(err, store.ErrNotFound) || (err == nil && inv.Status != "pending") {
		return nil, apierr.New(http.StatusNotFound, apierr.CodeInvitationNotFound, "no pending invitation with this token (it may have been used or withdrawn)")
	} else if err != nil {
		return nil, err
	}
	if !o.Now().Before(inv.ExpiresAt) {
		return nil, apierr.New(http.StatusGone, apierr.CodeInvitationExpired, "this invitation expired on "+inv.ExpiresAt.Format(time.RFC3339)+"; ask for a new one")
	}
	return inv, nil
}

func (o *Orgs) GetInvitation(ctx context.Context, req api.GetInvitationRequestObject) (api.GetInvitationResponseObject, error) {
	inv, err := o.invitation(ctx, o.Store.DB, req.Token, false)
	if err != nil {
		return nil, err
	}
	u, err := store.UserByID(ctx, o.Store.DB, inv.UserID)
	if err != nil {
		return nil, err
	}
	return api.GetInvitation200JSONResponse{OrganizationId: inv.OrgID, OrganizationName: inv.OrgName, Email: inv.Email, Name: inv.Name,
		Role: api.MemberRole(inv.Role), Status: api.InvitationInfoStatusPending, ExpiresAt: inv.ExpiresAt,
		ExistingUser: u.Status != "invited", Message: inv.Message}, nil
}

func (o *Orgs) AcceptInvitation(ctx context.Context, req api.AcceptInvitationRequestObject) (api.AcceptInvitationResponseObject, error) {
	b := req.Body
	var tr api.TokenResponse
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		inv, err := o.invitation(ctx, tx, req.Token, true)
		if err != nil {
			return err
		}
		u, err := store.UserByID(ctx, tx, inv.UserID)
		if err != nil {
			return err
		}
		now := o.Now()
		// A mailed token proves the mailbox; a link the inviter saw proves nothing about it.
		var verified *time.Time
		if inv.DeliveredByEmail {
			verified = &now
		}
		p := auth.FromContext(ctx)
		signedIn := p != nil && p.KeyID == "" && p.UserID == u.ID
		switch {
		case u.Status == "invited": // a new person: set up the account
			if u, err = o.newAccount(ctx, tx, u, b, verified, now); err != nil {
				return err
			}
		case u.Status != "active":
			return apierr.AuthRequired("this account is disabled")
		case signedIn && (u.EmailVerifiedAt != nil || inv.DeliveredByEmail):
			if u.EmailVerifiedAt == nil {
				if err := store.SetEmailVerified(ctx, tx, u.ID, now); err != nil {
					return err
				}
			}
		case signedIn:
			return apierr.New(http.StatusForbidden, apierr.CodeEmailNotVerified,
				"your email address is not verified, so this account cannot join another organization: verify it at /api/v1/auth/verify-email/send, then accept again")
		case inv.DeliveredByEmail && u.EmailVerifiedAt == nil:
			// The mailbox's owner claims the address from an account that never proved it (set
			// up through a link someone else could see): they get a new account; the old one is
			// disabled with its sessions and keys, keeps nothing of the address, and never gets
			// here. Pending invitations follow the address.
			fresh := &store.User{ID: store.NewID("usr"), Email: u.Email, Name: u.Name, Status: "invited", CreatedAt: now, UpdatedAt: now}
			if err := store.ReleaseUnverifiedAccount(ctx, tx, u.ID, now); err != nil {
				return err
			}
			if err := store.CreateUser(ctx, tx, fresh); err != nil {
				return err
			}
			if err := store.MovePendingInvitations(ctx, tx, u.ID, fresh.ID); err != nil {
				return err
			}
			if err := store.Audit(ctx, tx, store.AuditEntry{ActorID: fresh.ID, ActorEmail: fresh.Email, Action: "user.claim_email",
				ResourceType: "user", ResourceID: u.ID, ResourceName: u.Name, At: now,
				Details: map[string]any{"invitation_id": inv.ID, "released_user_id": u.ID}}); err != nil {
				return err
			}
			if u, err = o.newAccount(ctx, tx, fresh, b, verified, now); err != nil {
				return err
			}
		case p != nil && p.UserID != u.ID:
			return apierr.Forbidden("this invitation is for " + inv.Email + ", not for the account you are signed in as")
		default:
			return apierr.AuthRequired("this email already has an account: sign in as it and accept with its access token")
		}
		if err := store.AddMembership(ctx, tx, inv.OrgID, u.ID, inv.Role, "active", &now, now); err != nil {
			return err
		}
		if err := store.JoinTeams(ctx, tx, inv.OrgID, u.ID, inv.TeamIDs, now); err != nil {
			return err
		}
		if err := store.AcceptInvitation(ctx, tx, inv.ID, now); err != nil {
			return err
		}
		actx := auth.WithPrincipal(ctx, &auth.Principal{UserID: u.ID, Email: u.Email})
		if err := o.audit(actx, tx, inv.OrgID, "user.join", "user", u.ID, u.Name, map[string]any{"invitation_id": inv.ID, "role": inv.Role}); err != nil {
			return err
		}
		if err := store.Emit(ctx, tx, "user.joined", inv.OrgID, map[string]any{"organization_id": inv.OrgID, "user_id": u.ID, "role": inv.Role}, now); err != nil {
			return err
		}
		tr, err = o.signIn(ctx, tx, u, inv.OrgID, "invitation")
		return err
	})
	if err != nil {
		return nil, err
	}
	return acceptResponse{tr}, nil
}

// acceptResponse answers an accepted invitation with the same sign-in body as login.
type acceptResponse struct{ api.TokenResponse }

func (r acceptResponse) VisitAcceptInvitationResponse(w http.ResponseWriter) error {
	return api.Login200JSONResponse{Body: r.TokenResponse, Headers: api.Login200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}.VisitLoginResponse(w)
}

// newAccount sets up the invited placeholder u with the name and password of the request.
func (o *Orgs) newAccount(ctx context.Context, tx *sqlx.Tx, u *store.User, b *api.AcceptInvitationJSONRequestBody, verified *time.Time, now time.Time) (*store.User, error) {
	if b.Name == nil {
		return nil, apierr.Field("body.name", "required", "name is required to create your account")
	}
	if b.Password == nil {
		return nil, apierr.Field("body.password", "required", "password is required to create your account")
	}
	if code, why := auth.WeakPassword(*b.Password, u.Email, u.Name, *b.Name); code != "" {
		return nil, apierr.Field("body.password", code, why)
	}
	hash, err := o.Passwords.Hash(*b.Password)
	if err != nil {
		return nil, apierr.Field("body.password", "maxLength", "the password must be at most 72 bytes")
	}
	if err := store.ActivateUser(ctx, tx, u.ID, *b.Name, hash, verified, now); err != nil {
		return nil, err
	}
	u.Name, u.Status, u.PasswordHash, u.EmailVerifiedAt = *b.Name, "active", &hash, verified
	return u, nil
}
