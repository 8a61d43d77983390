package sns

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/sns/delivery"
)

// Mobile push and SMS: Ferry cannot reach Apple, Google or phone networks,
// so these resources are kept (durably, like topics) and what is
// published to them is recorded (GET /_ferry/sns/deliveries).

// Record kinds of the platform resources and the SMS settings.
const (
	kindPlatformApp      = "sns-platform-application"
	kindPlatformEndpoint = "sns-platform-endpoint"
	kindSMS              = "sns-sms"
	smsStateKey          = "state"
)

var platforms = []string{"ADM", "APNS", "APNS_SANDBOX", "APNS_VOIP", "APNS_VOIP_SANDBOX", "BAIDU", "GCM", "MACOS", "MACOS_SANDBOX", "MPNS", "WNS"}

// Endpoint attribute names.
var endpointAttributes = []string{"CustomUserData", "Enabled", "Token"}

// smsAttributes are the settable account SMS attributes.
var smsAttributes = []string{"DefaultSenderID", "DefaultSMSType", "DeliveryStatusIAMRole", "DeliveryStatusSuccessSamplingRate", "MonthlySpendLimit", "UsageReportS3Bucket"}

type platformApp struct {
	ARN        string            `json:"arn"`
	Platform   string            `json:"platform"`
	Name       string            `json:"name"`
	Attributes map[string]string `json:"attributes"`
}

type platformEndpoint struct {
	ARN        string            `json:"arn"`
	AppARN     string            `json:"app"`
	Attributes map[string]string `json:"attributes"`
}

// smsState is the account's SMS settings.
type smsState struct {
	Attributes map[string]string `json:"attributes"`
	OptedOut   []string          `json:"optedOut,omitempty"` // sorted
	Sandbox    map[string]string `json:"sandbox,omitempty"`  // phone number → Pending or Verified
}

// platformStore holds the platform resources; the service's writeMu
// serialises changes, mu guards reads.
type platformStore struct {
	apps      map[string]*platformApp
	endpoints map[string]*platformEndpoint
	sms       map[string]smsState // by account; absent: the defaults
}

// smsKey is the record key of the SMS settings of owner (an account in a
// region, region.Owner): the configured account of the home region keeps
// the key its settings have always had.
func (s *Service) smsKey(owner string) string {
	if owner == s.account {
		return smsStateKey
	}
	return smsStateKey + "/" + owner
}

// smsAccountOf is the account of an owner of SMS settings, whatever its
// region.
func (s *Service) smsAccountOf(owner string) string {
	a, _ := region.Split(owner, s.region)
	return a
}

// smsAccount is the owner (region.Owner) whose SMS settings the record
// key names.
func (s *Service) smsAccount(key string) string {
	if a, ok := strings.CutPrefix(key, smsStateKey+"/"); ok {
		return a
	}
	return s.account
}

type platformAttrsInput struct {
	Name       string
	Platform   string
	Attributes map[string]string `query:"Attributes,wrapped,key=key,value=value"`
}

type platformAppArnOutput struct{ PlatformApplicationArn string }

type platformAppArnInput struct {
	PlatformApplicationArn string
}

type setPlatformAppInput struct {
	PlatformApplicationArn string
	Attributes             map[string]string `query:"Attributes,wrapped,key=key,value=value"`
}

type platformAppEntry struct {
	PlatformApplicationArn string
	Attributes             map[string]string `query:"Attributes,wrapped,key=key,value=value"`
}

type listPlatformAppsOutput struct {
	PlatformApplications []platformAppEntry `query:"PlatformApplications,wrapped"`
	NextToken            string
}

type createEndpointInput struct {
	PlatformApplicationArn string
	Token                  string
	CustomUserData         *string
	Attributes             map[string]string `query:"Attributes,wrapped,key=key,value=value"`
}

type endpointArnOutput struct{ EndpointArn string }

type endpointArnInput struct{ EndpointArn string }

type setEndpointInput struct {
	EndpointArn string
	Attributes  map[string]string `query:"Attributes,wrapped,key=key,value=value"`
}

type endpointEntry struct {
	EndpointArn string
	Attributes  map[string]string `query:"Attributes,wrapped,key=key,value=value"`
}

type listEndpointsInput struct {
	PlatformApplicationArn string
	NextToken              string
}

type listEndpointsOutput struct {
	Endpoints []endpointEntry `query:"Endpoints,wrapped"`
	NextToken string
}

type smsAttributesInput struct {
	Attributes map[string]string `query:"attributes,wrapped,key=key,value=value"`
}

type getSMSAttributesInput struct {
	Attributes []string `query:"attributes,wrapped"`
}

type smsAttributesOutput struct {
	Attributes map[string]string `query:"attributes,wrapped,key=key,value=value"`
}

type phoneInput struct {
	PhoneNumber string `query:"phoneNumber"`
}

type optedOutOutput struct {
	IsOptedOut bool `query:"isOptedOut"`
}

type listOptedOutInput struct {
	NextToken string `query:"nextToken"`
}

type listOptedOutOutput struct {
	PhoneNumbers []string `query:"phoneNumbers,wrapped"`
	NextToken    string   `query:"nextToken"`
}

type sandboxStatusOutput struct{ IsInSandbox bool }

type sandboxPhoneInput struct {
	PhoneNumber     string
	LanguageCode    string
	OneTimePassword string
}

type listSandboxInput struct {
	NextToken  string
	MaxResults int
}

type sandboxPhone struct {
	PhoneNumber string
	Status      string
}

type listSandboxOutput struct {
	PhoneNumbers []sandboxPhone `query:"PhoneNumbers,wrapped"`
	NextToken    string
}

type originationNumber struct{ PhoneNumber string }

type listOriginationOutput struct {
	PhoneNumbers []originationNumber `query:"PhoneNumbers,wrapped"`
	NextToken    string
}

func (s *Service) platformActions() []protocol.Action {
	return []protocol.Action{
		protocol.Define("CreatePlatformApplication", s.createPlatformApplication),
		protocol.Define("GetPlatformApplicationAttributes", s.getPlatformApplicationAttributes),
		protocol.Define("SetPlatformApplicationAttributes", s.setPlatformApplicationAttributes),
		protocol.Define("DeletePlatformApplication", s.deletePlatformApplication),
		protocol.Define("ListPlatformApplications", s.listPlatformApplications),
		protocol.Define("CreatePlatformEndpoint", s.createPlatformEndpoint),
		protocol.Define("GetEndpointAttributes", s.getEndpointAttributes),
		protocol.Define("SetEndpointAttributes", s.setEndpointAttributes),
		protocol.Define("DeleteEndpoint", s.deleteEndpoint),
		protocol.Define("ListEndpointsByPlatformApplication", s.listEndpointsByPlatformApplication),
		protocol.Define("SetSMSAttributes", s.setSMSAttributes),
		protocol.Define("GetSMSAttributes", s.getSMSAttributes),
		protocol.Define("CheckIfPhoneNumberIsOptedOut", s.checkIfPhoneNumberIsOptedOut),
		protocol.Define("ListPhoneNumbersOptedOut", s.listPhoneNumbersOptedOut),
		protocol.Define("OptInPhoneNumber", s.optInPhoneNumber),
		protocol.Define("GetSMSSandboxAccountStatus", s.getSMSSandboxAccountStatus),
		protocol.Define("CreateSMSSandboxPhoneNumber", s.createSMSSandboxPhoneNumber),
		protocol.Define("VerifySMSSandboxPhoneNumber", s.verifySMSSandboxPhoneNumber),
		protocol.Define("DeleteSMSSandboxPhoneNumber", s.deleteSMSSandboxPhoneNumber),
		protocol.Define("ListSMSSandboxPhoneNumbers", s.listSMSSandboxPhoneNumbers),
		protocol.Define("ListOriginationNumbers", s.listOriginationNumbers),
	}
}

// loadPlatform reads the platform resources and SMS settings back.
func (s *Service) loadPlatform(ctx context.Context) error {
	s.platform = platformStore{apps: map[string]*platformApp{}, endpoints: map[string]*platformEndpoint{}, sms: map[string]smsState{}}
	for _, kind := range []string{kindPlatformApp, kindPlatformEndpoint, kindSMS} {
		recs, err := s.records.Records(ctx, kind)
		if err != nil {
			return fmt.Errorf("sns: load %s: %w", kind, err)
		}
		for _, r := range recs {
			if err := s.putPlatform(kind, r.Key, r.Value); err != nil {
				return fmt.Errorf("sns: %s record %s: %w", kind, r.Key, err)
			}
		}
	}
	return nil
}

// putPlatform installs a platform record of kind. The caller holds mu (or
// is loading, alone).
func (s *Service) putPlatform(kind, key string, b []byte) error {
	switch kind {
	case kindPlatformApp:
		a := &platformApp{}
		if err := json.Unmarshal(b, a); err != nil {
			return err
		}
		s.platform.apps[a.ARN] = a
	case kindPlatformEndpoint:
		e := &platformEndpoint{}
		if err := json.Unmarshal(b, e); err != nil {
			return err
		}
		s.platform.endpoints[e.ARN] = e
	case kindSMS:
		var st smsState
		if err := json.Unmarshal(b, &st); err != nil {
			return err
		}
		if st.Attributes == nil {
			st.Attributes = map[string]string{}
		}
		s.platform.sms[s.smsAccount(key)] = st
	}
	return nil
}

// removePlatform forgets the platform record kind/key, deleted through
// another node. The caller holds mu.
func (s *Service) removePlatform(kind, key string) {
	switch kind {
	case kindPlatformApp:
		delete(s.platform.apps, key)
	case kindPlatformEndpoint:
		delete(s.platform.endpoints, key)
	case kindSMS:
		delete(s.platform.sms, s.smsAccount(key))
	}
}

func (s *Service) putRecord(ctx context.Context, kind, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.records.PutRecord(ctx, kind, key, b)
}

var platformAppName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,256}$`)

// parsePlatformAppARN reads arn:aws:sns:{region}:{account}:app/{platform}/{name}.
func (s *Service) parsePlatformAppARN(arn string) error {
	parts, err := arnElements(arn, "PlatformApplicationArn")
	if err != nil {
		return err
	}
	if len(parts) != 6 || parts[2] != "sns" || !strings.HasPrefix(parts[5], "app/") {
		return invalidParameter("PlatformApplicationArn Reason: Wrong format for PlatformApplicationArn")
	}
	return nil
}

// app is the platform application arn names, for the request's action,
// which the application's account must be the caller's (ownedBy).
func (s *Service) app(ctx context.Context, arn, action string) (*platformApp, error) {
	if err := s.parsePlatformAppARN(arn); err != nil {
		return nil, err
	}
	s.mu.RLock()
	a := s.platform.apps[arn]
	s.mu.RUnlock()
	if a == nil {
		return nil, errNotFound.WithMessage("PlatformApplication does not exist")
	}
	if err := s.ownedBy(ctx, a.ARN, action); err != nil {
		return nil, err
	}
	return a, nil
}

// visibleAppAttributes hides the credentials, which AWS never returns.
func visibleAppAttributes(a *platformApp) map[string]string {
	out := maps.Clone(a.Attributes)
	delete(out, "PlatformCredential")
	delete(out, "PlatformPrincipal")
	return out
}

func (s *Service) createPlatformApplication(ctx context.Context, in *platformAttrsInput) (*platformAppArnOutput, error) {
	if !platformAppName.MatchString(in.Name) {
		return nil, invalidParameter("%s Reason: must contain only characters 'a'-'z', 'A'-'Z', '0'-'9', '_', '-', and '.'", in.Name)
	}
	if !slices.Contains(platforms, in.Platform) {
		return nil, invalidParameter("Platform Reason: %s is not supported", in.Platform)
	}
	if len(in.Attributes) == 0 {
		return nil, notNull("attributes")
	}
	if strings.HasPrefix(in.Platform, "APNS") {
		_, cred := in.Attributes["PlatformCredential"]
		_, princ := in.Attributes["PlatformPrincipal"]
		if cred && !princ {
			return nil, invalidParameter("Attributes Reason: PlatformCredential attribute provided without PlatformPrincipal")
		}
		if princ && !cred {
			return nil, invalidParameter("Attributes Reason: PlatformPrincipal attribute provided without PlatformCredential")
		}
	}
	arn := s.topicARN(ctx, "app/"+in.Platform+"/"+in.Name)
	a := &platformApp{ARN: arn, Platform: in.Platform, Name: in.Name, Attributes: map[string]string{"Enabled": "true"}}
	maps.Copy(a.Attributes, in.Attributes)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.putRecord(ctx, kindPlatformApp, arn, a); err != nil {
		return nil, s.internal(ctx, "create platform application", err)
	}
	s.mu.Lock()
	s.platform.apps[arn] = a
	s.mu.Unlock()
	return &platformAppArnOutput{PlatformApplicationArn: arn}, nil
}

func (s *Service) getPlatformApplicationAttributes(ctx context.Context, in *platformAppArnInput) (*attributesOutput, error) {
	a, err := s.app(ctx, in.PlatformApplicationArn, "GetPlatformApplicationAttributes")
	if err != nil {
		return nil, err
	}
	return &attributesOutput{Attributes: visibleAppAttributes(a)}, nil
}

func (s *Service) setPlatformApplicationAttributes(ctx context.Context, in *setPlatformAppInput) (*emptyOutput, error) {
	if len(in.Attributes) == 0 {
		return nil, notNull("attributes")
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	a, err := s.app(ctx, in.PlatformApplicationArn, "SetPlatformApplicationAttributes")
	if err != nil {
		return nil, err
	}
	c := *a
	c.Attributes = maps.Clone(a.Attributes)
	maps.Copy(c.Attributes, in.Attributes)
	if err := s.putRecord(ctx, kindPlatformApp, c.ARN, &c); err != nil {
		return nil, s.internal(ctx, "set platform application attributes", err)
	}
	s.mu.Lock()
	s.platform.apps[c.ARN] = &c
	s.mu.Unlock()
	return &emptyOutput{}, nil
}

func (s *Service) deletePlatformApplication(ctx context.Context, in *platformAppArnInput) (*emptyOutput, error) {
	if err := s.parsePlatformAppARN(in.PlatformApplicationArn); err != nil {
		return nil, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	a := s.platform.apps[in.PlatformApplicationArn]
	s.mu.RUnlock()
	if a != nil {
		if err := s.ownedBy(ctx, a.ARN, "DeletePlatformApplication"); err != nil {
			return nil, err
		}
	}
	s.mu.RLock()
	var eps []string
	for arn, e := range s.platform.endpoints {
		if e.AppARN == in.PlatformApplicationArn {
			eps = append(eps, arn)
		}
	}
	s.mu.RUnlock()
	for _, arn := range eps {
		if err := s.records.DeleteRecord(ctx, kindPlatformEndpoint, arn); err != nil {
			return nil, s.internal(ctx, "delete platform endpoint", err)
		}
		s.mu.Lock()
		delete(s.platform.endpoints, arn)
		s.mu.Unlock()
	}
	if err := s.records.DeleteRecord(ctx, kindPlatformApp, in.PlatformApplicationArn); err != nil {
		return nil, s.internal(ctx, "delete platform application", err)
	}
	s.mu.Lock()
	delete(s.platform.apps, in.PlatformApplicationArn)
	s.mu.Unlock()
	return &emptyOutput{}, nil
}

func (s *Service) listPlatformApplications(ctx context.Context, in *listInput) (*listPlatformAppsOutput, error) {
	prefix := s.topicARN(ctx, "") // the request's account and region
	apps := map[string]*platformApp{}
	s.mu.RLock()
	for arn, a := range s.platform.apps {
		if strings.HasPrefix(arn, prefix) {
			apps[arn] = a
		}
	}
	s.mu.RUnlock()
	arns := slices.Sorted(maps.Keys(apps))
	page, next, err := pageAfter(arns, in.NextToken)
	if err != nil {
		return nil, err
	}
	out := &listPlatformAppsOutput{PlatformApplications: []platformAppEntry{}, NextToken: next}
	for _, arn := range page {
		out.PlatformApplications = append(out.PlatformApplications, platformAppEntry{PlatformApplicationArn: arn, Attributes: visibleAppAttributes(apps[arn])})
	}
	return out, nil
}

func checkEndpointAttributes(attrs map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		if !slices.Contains(endpointAttributes, name) {
			return invalidParameter("Attributes Reason: Invalid attribute name: %s", name)
		}
	}
	if len(attrs["CustomUserData"]) > 2048 {
		return invalidParameter("Attributes Reason: Invalid value for attribute: CustomUserData: must be at most 2048 bytes long in UTF-8 encoding")
	}
	if v, ok := attrs["Enabled"]; ok {
		if _, valid := parseBoolAttr(v); !valid {
			return invalidParameter("Attributes Reason: Invalid value for attribute: Enabled: must be true or false")
		}
	}
	return nil
}

func (s *Service) createPlatformEndpoint(ctx context.Context, in *createEndpointInput) (*endpointArnOutput, error) {
	if in.Token == "" {
		return nil, notNull("token")
	}
	if err := checkEndpointAttributes(in.Attributes); err != nil {
		return nil, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	a, err := s.app(ctx, in.PlatformApplicationArn, "CreatePlatformEndpoint")
	if err != nil {
		return nil, err
	}
	attrs := map[string]string{"Enabled": "true", "Token": in.Token}
	if in.CustomUserData != nil {
		attrs["CustomUserData"] = *in.CustomUserData
	}
	maps.Copy(attrs, in.Attributes)
	s.mu.RLock()
	for _, e := range s.platform.endpoints {
		if e.AppARN == a.ARN && e.Attributes["Token"] == in.Token {
			s.mu.RUnlock()
			if !maps.Equal(e.Attributes, attrs) {
				return nil, invalidParameter("Token Reason: Endpoint %s already exists with the same Token, but different attributes.", e.ARN)
			}
			return &endpointArnOutput{EndpointArn: e.ARN}, nil
		}
	}
	s.mu.RUnlock()
	arn := strings.Replace(a.ARN, ":app/", ":endpoint/", 1) + "/" + uuid.NewString()
	e := &platformEndpoint{ARN: arn, AppARN: a.ARN, Attributes: attrs}
	if err := s.putRecord(ctx, kindPlatformEndpoint, arn, e); err != nil {
		return nil, s.internal(ctx, "create platform endpoint", err)
	}
	s.mu.Lock()
	s.platform.endpoints[arn] = e
	s.mu.Unlock()
	return &endpointArnOutput{EndpointArn: arn}, nil
}

// endpoint is the platform endpoint arn names, for the request's action,
// as app.
func (s *Service) endpoint(ctx context.Context, arn, action string) (*platformEndpoint, error) {
	if _, err := arnElements(arn, "EndpointArn"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	e := s.platform.endpoints[arn]
	s.mu.RUnlock()
	if e == nil {
		return nil, errNotFound.WithMessage("Endpoint does not exist")
	}
	if err := s.ownedBy(ctx, e.ARN, action); err != nil {
		return nil, err
	}
	return e, nil
}

func (s *Service) getEndpointAttributes(ctx context.Context, in *endpointArnInput) (*attributesOutput, error) {
	e, err := s.endpoint(ctx, in.EndpointArn, "GetEndpointAttributes")
	if err != nil {
		return nil, err
	}
	return &attributesOutput{Attributes: maps.Clone(e.Attributes)}, nil
}

func (s *Service) setEndpointAttributes(ctx context.Context, in *setEndpointInput) (*emptyOutput, error) {
	if len(in.Attributes) == 0 {
		return nil, notNull("attributes")
	}
	if err := checkEndpointAttributes(in.Attributes); err != nil {
		return nil, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	e, err := s.endpoint(ctx, in.EndpointArn, "SetEndpointAttributes")
	if err != nil {
		return nil, err
	}
	c := *e
	c.Attributes = maps.Clone(e.Attributes)
	maps.Copy(c.Attributes, in.Attributes)
	if err := s.putRecord(ctx, kindPlatformEndpoint, c.ARN, &c); err != nil {
		return nil, s.internal(ctx, "set endpoint attributes", err)
	}
	s.mu.Lock()
	s.platform.endpoints[c.ARN] = &c
	s.mu.Unlock()
	return &emptyOutput{}, nil
}

func (s *Service) deleteEndpoint(ctx context.Context, in *endpointArnInput) (*emptyOutput, error) {
	if _, err := arnElements(in.EndpointArn, "EndpointArn"); err != nil {
		return nil, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.RLock()
	e := s.platform.endpoints[in.EndpointArn]
	s.mu.RUnlock()
	if e != nil {
		if err := s.ownedBy(ctx, e.ARN, "DeleteEndpoint"); err != nil {
			return nil, err
		}
	}
	if err := s.records.DeleteRecord(ctx, kindPlatformEndpoint, in.EndpointArn); err != nil {
		return nil, s.internal(ctx, "delete endpoint", err)
	}
	s.mu.Lock()
	delete(s.platform.endpoints, in.EndpointArn)
	s.mu.Unlock()
	return &emptyOutput{}, nil
}

func (s *Service) listEndpointsByPlatformApplication(ctx context.Context, in *listEndpointsInput) (*listEndpointsOutput, error) {
	a, err := s.app(ctx, in.PlatformApplicationArn, "ListEndpointsByPlatformApplication")
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	eps := map[string]*platformEndpoint{}
	for arn, e := range s.platform.endpoints {
		if e.AppARN == a.ARN {
			eps[arn] = e
		}
	}
	s.mu.RUnlock()
	page, next, err := pageAfter(slices.Sorted(maps.Keys(eps)), in.NextToken)
	if err != nil {
		return nil, err
	}
	out := &listEndpointsOutput{Endpoints: []endpointEntry{}, NextToken: next}
	for _, arn := range page {
		out.Endpoints = append(out.Endpoints, endpointEntry{EndpointArn: arn, Attributes: maps.Clone(eps[arn].Attributes)})
	}
	return out, nil
}

// publishToEndpoint records a message published to a platform endpoint.
func (s *Service) publishToEndpoint(ctx context.Context, arn string, m *message) error {
	s.mu.RLock()
	e := s.platform.endpoints[arn]
	var a *platformApp
	if e != nil {
		a = s.platform.apps[e.AppARN]
	}
	s.mu.RUnlock()
	if e == nil || a == nil {
		return invalidParameter("TargetArn Reason: No endpoint found for the target arn specified")
	}
	if err := s.ownedBy(ctx, e.ARN, "Publish"); err != nil {
		return err
	}
	if e.Attributes["Enabled"] != "true" {
		return errEndpointDisabled
	}
	s.delivery.RecordPublish(delivery.ProtoApplication, arn, &m.Message, m.TextFor(a.Platform))
	return nil
}

// publishSMS records a message published straight to a phone number.
func (s *Service) publishSMS(ctx context.Context, phone string, m *message) error {
	s.mu.RLock()
	_, optedOut := slices.BinarySearch(s.platform.sms[s.ownerOf(ctx)].OptedOut, phone)
	s.mu.RUnlock()
	if optedOut {
		return errOptedOut
	}
	s.delivery.RecordPublish(delivery.ProtoSMS, phone, &m.Message, m.TextFor(delivery.ProtoSMS))
	return nil
}

// saveSMS stores account's SMS settings; the caller holds writeMu and
// passes a modified copy.
func (s *Service) saveSMS(ctx context.Context, account string, st smsState) error {
	if err := s.putRecord(ctx, kindSMS, s.smsKey(account), st); err != nil {
		return err
	}
	s.mu.Lock()
	s.platform.sms[account] = st
	s.mu.Unlock()
	return nil
}

// smsCopy is a copy of account's SMS settings.
func (s *Service) smsCopy(account string) smsState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.platform.sms[account]
	st.Attributes = maps.Clone(st.Attributes)
	if st.Attributes == nil {
		st.Attributes = map[string]string{}
	}
	st.OptedOut = slices.Clone(st.OptedOut)
	st.Sandbox = maps.Clone(st.Sandbox)
	return st
}

func (s *Service) setSMSAttributes(ctx context.Context, in *smsAttributesInput) (*emptyOutput, error) {
	if len(in.Attributes) == 0 {
		return nil, notNull("attributes")
	}
	for _, k := range slices.Sorted(maps.Keys(in.Attributes)) {
		if !slices.Contains(smsAttributes, k) {
			return nil, invalidParameter("%s is not a valid attribute", k)
		}
	}
	if v, ok := in.Attributes["DefaultSMSType"]; ok && v != "Promotional" && v != "Transactional" {
		return nil, invalidParameter("DefaultSMSType is invalid")
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	st := s.smsCopy(s.ownerOf(ctx))
	maps.Copy(st.Attributes, in.Attributes)
	if err := s.saveSMS(ctx, s.ownerOf(ctx), st); err != nil {
		return nil, s.internal(ctx, "set SMS attributes", err)
	}
	return &emptyOutput{}, nil
}

func (s *Service) getSMSAttributes(ctx context.Context, in *getSMSAttributesInput) (*smsAttributesOutput, error) {
	st := s.smsCopy(s.ownerOf(ctx))
	all := map[string]string{"MonthlySpendLimit": "1"}
	maps.Copy(all, st.Attributes)
	if len(in.Attributes) == 0 {
		return &smsAttributesOutput{Attributes: all}, nil
	}
	out := map[string]string{}
	for _, k := range in.Attributes {
		if v, ok := all[k]; ok {
			out[k] = v
		}
	}
	return &smsAttributesOutput{Attributes: out}, nil
}

func checkPhone(p string) error {
	if !e164.MatchString(p) {
		return invalidParameter("PhoneNumber Reason: input incorrectly formatted")
	}
	return nil
}

func (s *Service) checkIfPhoneNumberIsOptedOut(ctx context.Context, in *phoneInput) (*optedOutOutput, error) {
	if err := checkPhone(in.PhoneNumber); err != nil {
		return nil, err
	}
	_, out := slices.BinarySearch(s.smsCopy(s.ownerOf(ctx)).OptedOut, in.PhoneNumber)
	return &optedOutOutput{IsOptedOut: out}, nil
}

func (s *Service) listPhoneNumbersOptedOut(ctx context.Context, in *listOptedOutInput) (*listOptedOutOutput, error) {
	page, next, err := pageAfter(s.smsCopy(s.ownerOf(ctx)).OptedOut, in.NextToken)
	if err != nil {
		return nil, err
	}
	return &listOptedOutOutput{PhoneNumbers: append([]string{}, page...), NextToken: next}, nil
}

func (s *Service) optInPhoneNumber(ctx context.Context, in *phoneInput) (*emptyOutput, error) {
	if err := checkPhone(in.PhoneNumber); err != nil {
		return nil, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	st := s.smsCopy(s.ownerOf(ctx))
	i, found := slices.BinarySearch(st.OptedOut, in.PhoneNumber)
	if !found {
		return &emptyOutput{}, nil
	}
	st.OptedOut = slices.Delete(st.OptedOut, i, i+1)
	if err := s.saveSMS(ctx, s.ownerOf(ctx), st); err != nil {
		return nil, s.internal(ctx, "opt in", err)
	}
	return &emptyOutput{}, nil
}

// OptOut records that a phone number opted out of SMS from account's
// texts (what a reply of STOP does on AWS); "" is the configured account.
func (s *Service) OptOut(ctx context.Context, account, phone string) error {
	if err := checkPhone(phone); err != nil {
		return err
	}
	if account == "" {
		account = s.account
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	st := s.smsCopy(account)
	i, found := slices.BinarySearch(st.OptedOut, phone)
	if found {
		return nil
	}
	st.OptedOut = slices.Insert(st.OptedOut, i, phone)
	return s.saveSMS(ctx, account, st)
}

// serveOptOut opts phoneNumber out of the texts of account accountId
// (the configured account when absent).
func (s *Service) serveOptOut(w http.ResponseWriter, r *http.Request) {
	if err := s.OptOut(r.Context(), r.FormValue("accountId"), r.FormValue("phoneNumber")); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Ferry's account is out of the SMS sandbox: texts go to any number (that
// is, into the delivery log).
func (s *Service) getSMSSandboxAccountStatus(ctx context.Context, in *emptyInput) (*sandboxStatusOutput, error) {
	return &sandboxStatusOutput{IsInSandbox: false}, nil
}

func (s *Service) createSMSSandboxPhoneNumber(ctx context.Context, in *sandboxPhoneInput) (*emptyOutput, error) {
	if err := checkPhone(in.PhoneNumber); err != nil {
		return nil, err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	st := s.smsCopy(s.ownerOf(ctx))
	if st.Sandbox == nil {
		st.Sandbox = map[string]string{}
	}
	if _, ok := st.Sandbox[in.PhoneNumber]; !ok {
		st.Sandbox[in.PhoneNumber] = "Pending"
	}
	if err := s.saveSMS(ctx, s.ownerOf(ctx), st); err != nil {
		return nil, s.internal(ctx, "create sandbox number", err)
	}
	return &emptyOutput{}, nil
}

var otp = regexp.MustCompile(`^[0-9]{5,8}$`)

func (s *Service) verifySMSSandboxPhoneNumber(ctx context.Context, in *sandboxPhoneInput) (*emptyOutput, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	st := s.smsCopy(s.ownerOf(ctx))
	if _, ok := st.Sandbox[in.PhoneNumber]; !ok {
		return nil, errResourceNotFound.WithMessage("The phone number %s is not in the SMS sandbox.", in.PhoneNumber)
	}
	if !otp.MatchString(in.OneTimePassword) {
		return nil, errVerification.WithMessage("Invalid one-time password.")
	}
	st.Sandbox[in.PhoneNumber] = "Verified"
	if err := s.saveSMS(ctx, s.ownerOf(ctx), st); err != nil {
		return nil, s.internal(ctx, "verify sandbox number", err)
	}
	return &emptyOutput{}, nil
}

func (s *Service) deleteSMSSandboxPhoneNumber(ctx context.Context, in *sandboxPhoneInput) (*emptyOutput, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	st := s.smsCopy(s.ownerOf(ctx))
	if _, ok := st.Sandbox[in.PhoneNumber]; !ok {
		return nil, errResourceNotFound.WithMessage("The phone number %s is not in the SMS sandbox.", in.PhoneNumber)
	}
	delete(st.Sandbox, in.PhoneNumber)
	if err := s.saveSMS(ctx, s.ownerOf(ctx), st); err != nil {
		return nil, s.internal(ctx, "delete sandbox number", err)
	}
	return &emptyOutput{}, nil
}

func (s *Service) listSMSSandboxPhoneNumbers(ctx context.Context, in *listSandboxInput) (*listSandboxOutput, error) {
	st := s.smsCopy(s.ownerOf(ctx))
	page, next, err := pageAfter(slices.Sorted(maps.Keys(st.Sandbox)), in.NextToken)
	if err != nil {
		return nil, err
	}
	out := &listSandboxOutput{PhoneNumbers: []sandboxPhone{}, NextToken: next}
	for _, p := range page {
		out.PhoneNumbers = append(out.PhoneNumbers, sandboxPhone{PhoneNumber: p, Status: st.Sandbox[p]})
	}
	return out, nil
}

// Ferry owns no origination numbers.
func (s *Service) listOriginationNumbers(ctx context.Context, in *listSandboxInput) (*listOriginationOutput, error) {
	return &listOriginationOutput{PhoneNumbers: []originationNumber{}}, nil
}
