package demo

// Static data of the generator: the taxonomy, archetypes of organisations, professions and the word
// lists names are made of. Everything here is in slices (never maps iterated) so output is stable.

// category is a directory category of platform types (or, for local-type categories, of local types).
type category struct {
	code, name, icon string
	localTypes       []string // a category made of local types
	restricted       bool     // visible to professional and partner only
}

var categories = []category{
	{code: "primary_care", name: "Doctors and primary care", icon: "stethoscope"},
	{code: "dental", name: "Dental care", icon: "tooth"},
	{code: "pharmacy", name: "Pharmacies", icon: "pills"},
	{code: "mental_health", name: "Mental health, alcohol and drugs", icon: "brain"},
	{code: "allied_health", name: "Allied health", icon: "hand-holding-medical"},
	{code: "children_families", name: "Children and families", icon: "baby"},
	{code: "aged_disability", name: "Ageing and disability", icon: "person-cane"},
	{code: "family_safety", name: "Family safety", icon: "hands-holding-child"},
	{code: "community_support", name: "Housing and community support", icon: "users"},
	{code: "hospital", name: "Hospitals and specialists", icon: "heart-pulse"},
	{code: "womens_health", name: "Women's health", icon: "venus",
		localTypes: []string{"womens_health", "menopause", "perinatal_mental_health"}},
	{code: "clinical_pathways", name: "Clinical pathways", icon: "route",
		localTypes: []string{"otp"}, restricted: true},
}

// Referral patterns of a type.
const (
	refNone       = iota // no referral needed, nothing said
	refSelf              // not required; self referral welcome
	refGP                // required from a GP
	refGPSpec            // required from a GP or specialist
	refOpen              // not required; self, GP, hospital or community
	refAssessment        // required from an assessment service or case manager
)

// ptype is a platform type with what the generator needs to make services of it.
type ptype struct {
	code, label, nzLabel, icon, category string
	names                                []string // service name templates
	desc                                 string
	referral                             int
	apptRequired                         float64 // probability that an appointment is required
	costs                                []string
	delivery                             []string // usual ways of delivery; in_person first when offered
	prof                                 int      // index into professions
	programsAU, programsNZ               []string
	groups                               []string // likely target groups (codes of both countries)
}

// Indices into professions.
const (
	profGP = iota
	profNurse
	profMidwifeNurse
	profDentist
	profPharmacist
	profPsychologist
	profCounsellor
	profMHNurse
	profYouthWorker
	profAOD
	profPhysio
	profPodiatrist
	profOT
	profSpeech
	profDietitian
	profEP
	profAssessor
	profCareWorker
	profSupportCoord
	profCaseWorker
	profFinCounsellor
	profEDPhysician
	profSpecialist
	profCollector
	profRadiologist
	profPalliative
	profAHW
)

var ptypes = []ptype{
	{code: "gp", label: "General practice", icon: "stethoscope", category: "primary_care",
		names:    []string{"General practice", "GP clinic", "Family medicine clinic", "Bulk-billing GP clinic"},
		desc:     "Doctors for everyday health care: check-ups, vaccinations, chronic disease care, mental health plans and referrals.",
		referral: refNone, apptRequired: 0.7, costs: []string{"bulk_billed", "fees_concession", "fees", "varies"},
		delivery: []string{"in_person", "telehealth", "home_visit"}, prof: profGP,
		programsAU: []string{"dva", "itc"}, programsNZ: []string{"vlca"},
		groups: []string{"older_people", "children", "tamariki"}},
	{code: "after_hours_gp", label: "After-hours GP", icon: "", category: "primary_care",
		names:    []string{"After-hours GP clinic", "Evening and weekend GP", "Urgent care clinic"},
		desc:     "See a doctor in the evening, at weekends and on public holidays for problems that cannot wait but are not emergencies.",
		referral: refNone, apptRequired: 0.2, costs: []string{"bulk_billed", "fees_concession"},
		delivery: []string{"in_person", "telehealth"}, prof: profGP},
	{code: "community_nursing", label: "Community nursing", icon: "user-nurse", category: "primary_care",
		names:    []string{"Community nursing", "District nursing", "Nurse-led clinic"},
		desc:     "Nurses who care for you at home or in the clinic: wound care, medicines, continence and care after hospital.",
		referral: refOpen, apptRequired: 0.9, costs: []string{"free", "fees_concession"},
		delivery: []string{"in_person", "home_visit"}, prof: profNurse,
		programsAU: []string{"chsp", "dva"}, programsNZ: []string{"dss"}, groups: []string{"older_people", "kaumatua"}},
	{code: "sexual_health", label: "Sexual health clinic", icon: "", category: "primary_care",
		names:    []string{"Sexual health clinic", "Sexual and reproductive health service"},
		desc:     "Confidential testing and treatment for sexually transmissible infections, contraception and PrEP.",
		referral: refSelf, apptRequired: 0.5, costs: []string{"free"},
		delivery: []string{"in_person", "telehealth"}, prof: profNurse,
		groups: []string{"young_people", "lgbtiqa", "rangatahi"}},
	{code: "aboriginal_health", label: "Aboriginal community controlled health service", nzLabel: "Hauora Māori provider",
		icon: "users", category: "primary_care",
		names:    []string{"Aboriginal health clinic", "Community health and wellbeing", "Family health clinic"},
		desc:     "Culturally safe health care for the community, with doctors, nurses, health workers and transport to appointments.",
		referral: refSelf, apptRequired: 0.4, costs: []string{"free", "bulk_billed"},
		delivery: []string{"in_person", "outreach", "home_visit", "telehealth"}, prof: profAHW,
		programsAU: []string{"itc"}, programsNZ: []string{"whanau_ora", "vlca"},
		groups: []string{"first_nations", "maori", "pacific"}},
	{code: "dentist", label: "Dentist", icon: "tooth", category: "dental",
		names:    []string{"Dental clinic", "Family dentistry", "General dentistry"},
		desc:     "Check-ups, cleaning, fillings, extractions and emergency dental care.",
		referral: refNone, apptRequired: 0.95, costs: []string{"fees", "fees_concession"},
		delivery: []string{"in_person"}, prof: profDentist, programsAU: []string{"dva"},
		groups: []string{"children", "tamariki"}},
	{code: "public_dental", label: "Public dental clinic", icon: "tooth", category: "dental",
		names:    []string{"Public dental clinic", "Community dental service", "Child dental service"},
		desc:     "Free or low-cost dental care for children and for adults with a concession card.",
		referral: refSelf, apptRequired: 0.9, costs: []string{"free", "fees_concession"},
		delivery: []string{"in_person", "outreach"}, prof: profDentist,
		groups: []string{"children", "tamariki", "older_people"}},
	{code: "pharmacy", label: "Pharmacy", icon: "pills", category: "pharmacy",
		names:    []string{"Pharmacy", "Community pharmacy", "Chemist"},
		desc:     "Prescriptions, medicines advice, vaccinations, blood pressure checks and medicine reviews.",
		referral: refNone, apptRequired: 0.05, costs: []string{"varies", "fees"},
		delivery: []string{"in_person", "phone"}, prof: profPharmacist},
	{code: "psychology", label: "Psychology", icon: "brain", category: "mental_health",
		names:    []string{"Psychology clinic", "Psychological services", "Clinical psychology"},
		desc:     "Talking therapies for anxiety, depression, trauma and life changes, with psychologists.",
		referral: refGP, apptRequired: 1, costs: []string{"fees", "bulk_billed", "fees_concession"},
		delivery: []string{"in_person", "telehealth"}, prof: profPsychologist,
		programsAU: []string{"better_access", "phn_commissioned"}, programsNZ: []string{"access_choice"},
		groups: []string{"young_people", "lgbtiqa", "veterans", "rangatahi"}},
	{code: "counselling", label: "Counselling", icon: "comments", category: "mental_health",
		names:    []string{"Counselling service", "Family counselling", "Grief and loss counselling"},
		desc:     "Free and confidential counselling for individuals, couples and families.",
		referral: refSelf, apptRequired: 0.9, costs: []string{"free", "fees_concession"},
		delivery: []string{"in_person", "telehealth", "phone"}, prof: profCounsellor,
		programsAU: []string{"phn_commissioned"}, programsNZ: []string{"access_choice"},
		groups: []string{"cald", "refugees"}},
	{code: "community_mental_health", label: "Community mental health", icon: "brain", category: "mental_health",
		names:    []string{"Adult community mental health team", "Community mental health service", "Mental health intake and assessment"},
		desc:     "Assessment, treatment and case management for people with serious mental illness, close to home.",
		referral: refOpen, apptRequired: 0.8, costs: []string{"free"},
		delivery: []string{"in_person", "home_visit", "phone", "outreach"}, prof: profMHNurse,
		programsAU: []string{"phn_commissioned"}, programsNZ: []string{"access_choice"}},
	{code: "youth_mental_health", label: "Youth mental health (12–25)", nzLabel: "Youth mental health (rangatahi)",
		icon: "", category: "mental_health",
		names:    []string{"Youth mental health hub", "Youth wellbeing service", "Young people's counselling"},
		desc:     "Free support for young people aged 12 to 25 with mental health, physical health, alcohol and drugs, and work and study.",
		referral: refSelf, apptRequired: 0.6, costs: []string{"free"},
		delivery: []string{"in_person", "telehealth", "phone"}, prof: profYouthWorker,
		programsAU: []string{"phn_commissioned"}, programsNZ: []string{"access_choice"},
		groups: []string{"young_people", "rangatahi", "lgbtiqa"}},
	{code: "mental_health_crisis", label: "Mental health crisis support", icon: "", category: "mental_health",
		names:    []string{"Mental health crisis team", "Acute care team", "Crisis assessment and treatment"},
		desc:     "Urgent mental health assessment and support, any time of day or night.",
		referral: refOpen, apptRequired: 0, costs: []string{"free"},
		delivery: []string{"phone", "outreach", "in_person"}, prof: profMHNurse},
	{code: "aod", label: "Alcohol and other drugs", nzLabel: "Alcohol and other drugs (addiction services)",
		icon: "", category: "mental_health",
		names:    []string{"Alcohol and drug service", "Drug and alcohol counselling", "Withdrawal and recovery support"},
		desc:     "Counselling, withdrawal support, pharmacotherapy and recovery programs for alcohol and other drug use.",
		referral: refSelf, apptRequired: 0.7, costs: []string{"free"},
		delivery: []string{"in_person", "telehealth", "outreach"}, prof: profAOD,
		programsAU: []string{"phn_commissioned"}, groups: []string{"young_people", "first_nations", "maori"}},
	{code: "physiotherapy", label: "Physiotherapy", icon: "person-walking", category: "allied_health",
		names:    []string{"Physiotherapy", "Physiotherapy and sports injury clinic", "Hydrotherapy and rehabilitation"},
		desc:     "Treatment and exercise programs for injuries, pain, surgery recovery and long-term conditions.",
		referral: refNone, apptRequired: 0.95, costs: []string{"fees", "fees_concession"},
		delivery: []string{"in_person", "home_visit", "telehealth"}, prof: profPhysio,
		programsAU: []string{"ndis", "dva"}, programsNZ: []string{"acc"}, groups: []string{"older_people"}},
	{code: "podiatry", label: "Podiatry", icon: "shoe-prints", category: "allied_health",
		names:    []string{"Podiatry", "Foot clinic", "High-risk foot service"},
		desc:     "Care of feet and lower limbs: nails, wounds, diabetes foot checks, orthotics.",
		referral: refNone, apptRequired: 0.95, costs: []string{"fees", "fees_concession"},
		delivery: []string{"in_person", "home_visit"}, prof: profPodiatrist,
		programsAU: []string{"chsp", "dva"}, groups: []string{"older_people", "kaumatua"}},
	{code: "occupational_therapy", label: "Occupational therapy", icon: "", category: "allied_health",
		names:    []string{"Occupational therapy", "Paediatric occupational therapy", "Home modifications and equipment"},
		desc:     "Help to do everyday things: home safety, equipment, returning to work and child development.",
		referral: refOpen, apptRequired: 1, costs: []string{"fees", "free"},
		delivery: []string{"in_person", "home_visit", "telehealth"}, prof: profOT,
		programsAU: []string{"ndis", "chsp"}, programsNZ: []string{"dss", "acc"},
		groups: []string{"people_with_disability", "children", "tamariki"}},
	{code: "speech_pathology", label: "Speech pathology", nzLabel: "Speech-language therapy", icon: "comment-medical",
		category: "allied_health",
		names:    []string{"Speech pathology", "Children's speech and language", "Swallowing and communication clinic"},
		desc:     "Help with speech, language, stuttering, voice and swallowing for children and adults.",
		referral: refNone, apptRequired: 1, costs: []string{"fees", "free"},
		delivery: []string{"in_person", "telehealth"}, prof: profSpeech,
		programsAU: []string{"ndis"}, programsNZ: []string{"dss"}, groups: []string{"children", "tamariki"}},
	{code: "dietetics", label: "Dietetics", icon: "apple-whole", category: "allied_health",
		names:    []string{"Dietitian", "Nutrition and dietetics clinic"},
		desc:     "Advice on food and nutrition for diabetes, heart health, allergies, eating disorders and weight.",
		referral: refNone, apptRequired: 1, costs: []string{"fees", "fees_concession"},
		delivery: []string{"in_person", "telehealth"}, prof: profDietitian, programsAU: []string{"chsp", "ndis"}},
	{code: "exercise_physiology", label: "Exercise physiology", icon: "", category: "allied_health",
		names:    []string{"Exercise physiology", "Exercise clinic"},
		desc:     "Supervised exercise programs for chronic conditions, injury and healthy ageing.",
		referral: refNone, apptRequired: 1, costs: []string{"fees"},
		delivery: []string{"in_person", "telehealth"}, prof: profEP, programsAU: []string{"ndis", "dva"}},
	{code: "maternal_child_health", label: "Maternal and child health", nzLabel: "Well Child Tamariki Ora",
		icon: "baby", category: "children_families",
		names:    []string{"Maternal and child health", "Child and family health nursing", "Baby health clinic"},
		desc:     "Free checks of your child's health and development from birth to school age, and support for parents.",
		referral: refSelf, apptRequired: 0.8, costs: []string{"free"},
		delivery: []string{"in_person", "home_visit"}, prof: profMidwifeNurse,
		programsNZ: []string{"well_child"}, groups: []string{"children", "tamariki"}},
	{code: "early_parenting", label: "Early parenting support", icon: "", category: "children_families",
		names:    []string{"Early parenting centre", "Parenting support program", "Sleep and settling service"},
		desc:     "Day stays, groups and home visits to help with sleep, settling, feeding and adjusting to parenthood.",
		referral: refOpen, apptRequired: 0.9, costs: []string{"free"},
		delivery: []string{"in_person", "home_visit", "telehealth"}, prof: profMidwifeNurse,
		groups: []string{"children", "tamariki"}},
	{code: "aged_care_assessment", label: "Aged care assessment", nzLabel: "Needs assessment (NASC)",
		icon: "person-cane", category: "aged_disability",
		names:    []string{"Aged care assessment team", "Home support assessment", "Needs assessment service"},
		desc:     "Assessment for home support, respite and residential aged care.",
		referral: refAssessment, apptRequired: 1, costs: []string{"free"},
		delivery: []string{"home_visit", "phone", "in_person"}, prof: profAssessor,
		programsAU: []string{"chsp"}, programsNZ: []string{"dss"}, groups: []string{"older_people", "kaumatua"}},
	{code: "home_care", label: "Home care and support", icon: "house-chimney-medical", category: "aged_disability",
		names:    []string{"Home care", "Home support services", "Respite and day centre"},
		desc:     "Help at home with personal care, cleaning, meals, shopping and transport, and respite for carers.",
		referral: refAssessment, apptRequired: 1, costs: []string{"fees_concession", "varies"},
		delivery: []string{"home_visit", "in_person"}, prof: profCareWorker,
		programsAU: []string{"chsp", "dva"}, programsNZ: []string{"dss"}, groups: []string{"older_people", "kaumatua"}},
	{code: "disability_support", label: "Disability support", icon: "wheelchair", category: "aged_disability",
		names:    []string{"Disability support services", "Supported independent living", "Community participation program"},
		desc:     "Support for people with disability to live independently, take part in the community and reach their goals.",
		referral: refSelf, apptRequired: 0.9, costs: []string{"varies", "free"},
		delivery: []string{"in_person", "home_visit", "outreach"}, prof: profSupportCoord,
		programsAU: []string{"ndis"}, programsNZ: []string{"dss"}, groups: []string{"people_with_disability"}},
	{code: "domestic_violence", label: "Domestic and family violence support", nzLabel: "Family violence support",
		icon: "hands-holding-child", category: "family_safety",
		names:    []string{"Family violence support", "Women's and children's safety service", "Safety planning and case management"},
		desc:     "Confidential support, safety planning, crisis accommodation and court support for people experiencing family violence.",
		referral: refSelf, apptRequired: 0.3, costs: []string{"free"},
		delivery: []string{"phone", "in_person", "outreach"}, prof: profCaseWorker,
		groups: []string{"women", "children", "cald", "tamariki"}},
	{code: "housing_support", label: "Housing and homelessness support", icon: "house", category: "community_support",
		names:    []string{"Housing support", "Homelessness assistance", "Tenancy support program"},
		desc:     "Help to find and keep a home: crisis accommodation, tenancy support and referrals.",
		referral: refSelf, apptRequired: 0.4, costs: []string{"free"},
		delivery: []string{"in_person", "phone", "outreach"}, prof: profCaseWorker,
		groups: []string{"homeless", "young_people", "rangatahi"}},
	{code: "financial_counselling", label: "Financial counselling", icon: "", category: "community_support",
		names:    []string{"Financial counselling", "Money and debt help"},
		desc:     "Free, independent help with debts, bills and money problems.",
		referral: refSelf, apptRequired: 0.9, costs: []string{"free"},
		delivery: []string{"in_person", "phone", "telehealth"}, prof: profFinCounsellor},
	{code: "emergency_relief", label: "Emergency relief", icon: "", category: "community_support",
		names:    []string{"Emergency relief", "Food and material aid", "Community pantry"},
		desc:     "Food parcels, vouchers and help with bills in a crisis.",
		referral: refSelf, apptRequired: 0.2, costs: []string{"free"},
		delivery: []string{"in_person"}, prof: profCaseWorker, groups: []string{"homeless"}},
	{code: "emergency_department", label: "Emergency department", icon: "truck-medical", category: "hospital",
		names:    []string{"Emergency department", "Urgent care centre"},
		desc:     "Emergency care for serious illness and injury, open 24 hours. In an emergency call triple zero.",
		referral: refNone, apptRequired: 0, costs: []string{"free"},
		delivery: []string{"in_person"}, prof: profEDPhysician},
	{code: "hospital_outpatients", label: "Specialist outpatient clinic", icon: "heart-pulse", category: "hospital",
		names:    []string{"Specialist outpatient clinics", "Cardiology clinic", "Diabetes and endocrinology clinic", "Respiratory clinic"},
		desc:     "Specialist clinics for people referred by their doctor.",
		referral: refGPSpec, apptRequired: 1, costs: []string{"free", "bulk_billed"},
		delivery: []string{"in_person", "telehealth"}, prof: profSpecialist},
	{code: "pathology", label: "Pathology collection", icon: "vial", category: "hospital",
		names:    []string{"Pathology collection centre", "Blood test collection"},
		desc:     "Blood and other tests requested by your doctor; no appointment needed for most tests.",
		referral: refGPSpec, apptRequired: 0.1, costs: []string{"bulk_billed", "fees"},
		delivery: []string{"in_person", "home_visit"}, prof: profCollector},
	{code: "radiology", label: "Medical imaging", icon: "x-ray", category: "hospital",
		names:    []string{"Medical imaging", "X-ray and ultrasound", "Radiology"},
		desc:     "X-ray, ultrasound, CT and MRI when your doctor requests them.",
		referral: refGPSpec, apptRequired: 0.8, costs: []string{"bulk_billed", "fees"},
		delivery: []string{"in_person"}, prof: profRadiologist},
	{code: "palliative_care", label: "Palliative care", icon: "", category: "hospital",
		names:    []string{"Palliative care service", "Community palliative care"},
		desc:     "Care and support for people living with a life-limiting illness, and their families and carers.",
		referral: refGPSpec, apptRequired: 1, costs: []string{"free"},
		delivery: []string{"home_visit", "in_person", "telehealth"}, prof: profPalliative,
		groups: []string{"older_people", "kaumatua"}},
}

// ptypeIndex returns the index of the platform type with the code; it panics on an unknown code,
// which is a defect of the tables above.
func ptypeIndex(code string) uint8 {
	for i := range ptypes {
		if ptypes[i].code == code {
			return uint8(i)
		}
	}
	panic("demo: unknown platform type " + code)
}

// ltype is a local type (a specialty) of the directory.
type ltype struct {
	code, slug, label, nzLabel, icon string
	refines                          []string
	restricted                       bool // visible to professional and partner only
}

var ltypes = []ltype{
	{code: "skin_checks", slug: "skin-cancer-checks", label: "Skin cancer checks", refines: []string{"gp"}},
	{code: "travel_vaccination", slug: "travel-vaccinations", label: "Travel vaccinations", icon: "syringe",
		refines: []string{"gp", "pharmacy"}},
	{code: "womens_health", slug: "womens-health", label: "Women's health", icon: "venus",
		refines: []string{"gp", "physiotherapy", "sexual_health"}},
	{code: "menopause", slug: "menopause-care", label: "Menopause care", refines: []string{"gp"}},
	{code: "mens_health", slug: "mens-health", label: "Men's health", icon: "mars", refines: []string{"gp"}},
	{code: "perinatal_mental_health", slug: "perinatal-mental-health", label: "Perinatal mental health",
		refines: []string{"psychology", "community_mental_health", "maternal_child_health"}},
	{code: "eating_disorders", slug: "eating-disorders", label: "Eating disorders",
		refines: []string{"psychology", "dietetics"}},
	{code: "sports_physio", slug: "sports-physiotherapy", label: "Sports physiotherapy",
		refines: []string{"physiotherapy", "exercise_physiology"}},
	{code: "paediatric_dentistry", slug: "childrens-dentistry", label: "Children's dentistry", icon: "tooth",
		refines: []string{"dentist", "public_dental"}},
	{code: "ndis_coordination", slug: "ndis-support-coordination", label: "NDIS support coordination",
		nzLabel: "Disability support coordination", refines: []string{"disability_support"}},
	{code: "sewb", slug: "social-emotional-wellbeing", label: "Social and emotional wellbeing",
		nzLabel: "Kaupapa Māori mental health", refines: []string{"aboriginal_health", "community_mental_health"}},
	{code: "lgbtiq_inclusive", slug: "lgbtiqa-inclusive", label: "LGBTIQA+ inclusive", nzLabel: "Rainbow inclusive",
		icon: "rainbow"},
	{code: "trauma_informed", slug: "trauma-informed", label: "Trauma-informed care"},
	{code: "otp", slug: "opioid-treatment", label: "Opioid treatment program prescriber", restricted: true,
		refines: []string{"aod", "gp", "pharmacy"}},
}

// Local types that refine no platform type, used to make "first tag does not refine" cases.
var nonRefining = []string{"lgbtiq_inclusive", "trauma_informed"}

type term struct{ code, name string }

var programsAU = []term{
	{"better_access", "Better Access (Medicare mental health)"},
	{"ndis", "NDIS registered provider"},
	{"dva", "DVA health care for veterans"},
	{"itc", "Integrated Team Care"},
	{"chsp", "Commonwealth Home Support Programme"},
	{"phn_commissioned", "PHN-commissioned service"},
}

var programsNZ = []term{
	{"vlca", "Very Low Cost Access"},
	{"whanau_ora", "Whānau Ora"},
	{"access_choice", "Access and Choice (primary mental health)"},
	{"acc", "ACC-registered provider"},
	{"well_child", "Well Child Tamariki Ora"},
	{"dss", "Disability Support Services"},
}

var groupsAU = []term{
	{"children", "Children (0–12)"},
	{"young_people", "Young people (12–25)"},
	{"older_people", "Older people"},
	{"first_nations", "Aboriginal and Torres Strait Islander peoples"},
	{"cald", "Culturally and linguistically diverse communities"},
	{"lgbtiqa", "LGBTIQA+ people"},
	{"people_with_disability", "People with disability"},
	{"veterans", "Veterans and their families"},
	{"women", "Women"},
	{"homeless", "People experiencing homelessness"},
}

var groupsNZ = []term{
	{"tamariki", "Tamariki (children)"},
	{"rangatahi", "Rangatahi (young people)"},
	{"kaumatua", "Kaumātua and older people"},
	{"maori", "Māori"},
	{"pacific", "Pacific peoples"},
	{"lgbtiqa", "Rainbow communities"},
	{"people_with_disability", "Disabled people"},
	{"refugees", "Former refugees and new migrants"},
	{"women", "Women"},
	{"homeless", "People without a home"},
}

// profession is what a practitioner at a service of some type does.
type profession struct {
	titles      []string
	dr          float64 // probability of the prefix Dr
	qualsAU     [][]string
	qualsNZ     [][]string
	ahpra       string // Ahpra profession prefix; empty when not registered with Ahpra
	registeredN bool   // registered with a New Zealand authority (has an HPI person identifier)
	interests   []string
}

var professions = []profession{
	profGP: {titles: []string{"General practitioner", "General practitioner", "GP registrar", "Senior general practitioner"}, dr: 1,
		qualsAU: [][]string{{"MBBS", "FRACGP"}, {"MBBS (Hons)", "FRACGP", "DCH"}, {"BMed", "FACRRM"}, {"MD", "FRACGP"}},
		qualsNZ: [][]string{{"MBChB", "FRNZCGP"}, {"MBChB", "DipObs", "FRNZCGP"}},
		ahpra:   "MED", registeredN: true,
		interests: []string{"women's health", "children's health", "mental health", "chronic disease", "skin checks", "aged care", "sports medicine", "refugee health"}},
	profNurse: {titles: []string{"Registered nurse", "Practice nurse", "Clinical nurse consultant", "Nurse practitioner"},
		qualsAU: [][]string{{"BN", "RN"}, {"BNurs", "Grad Cert Wound Care"}, {"MNP", "NP"}},
		qualsNZ: [][]string{{"BN", "RN"}, {"PGDipHSc (Nursing)", "RN"}},
		ahpra:   "NMW", registeredN: true,
		interests: []string{"wound care", "immunisation", "diabetes education", "continence", "sexual health"}},
	profMidwifeNurse: {titles: []string{"Maternal and child health nurse", "Child and family health nurse", "Midwife"},
		qualsAU: [][]string{{"BN", "RM", "Grad Dip Child & Family Health"}, {"BMid"}},
		qualsNZ: [][]string{{"BN", "RN", "PGCert Well Child"}, {"BMid", "RM"}},
		ahpra:   "NMW", registeredN: true,
		interests: []string{"breastfeeding", "sleep and settling", "postnatal depression", "child development"}},
	profDentist: {titles: []string{"Dentist", "Dentist", "Senior dentist", "Paediatric dentist"}, dr: 0.8,
		qualsAU: [][]string{{"BDS"}, {"BDSc"}, {"DDS"}, {"BDSc", "MDSc (Paed Dent)"}},
		qualsNZ: [][]string{{"BDS"}, {"BDS", "DClinDent"}},
		ahpra:   "DEN", registeredN: true,
		interests: []string{"children's dentistry", "anxious patients", "implants", "gum disease"}},
	profPharmacist: {titles: []string{"Pharmacist", "Pharmacist in charge", "Consultant pharmacist"},
		qualsAU: [][]string{{"BPharm", "MPS"}, {"MPharm"}, {"BPharm", "AACPA"}},
		qualsNZ: [][]string{{"BPharm"}, {"BPharm", "PGCertClinPharm"}},
		ahpra:   "PHA", registeredN: true,
		interests: []string{"medication reviews", "vaccinations", "opioid replacement therapy", "diabetes"}},
	profPsychologist: {titles: []string{"Psychologist", "Clinical psychologist", "Counselling psychologist"}, dr: 0.25,
		qualsAU: [][]string{{"BPsych (Hons)", "MPsych (Clin)"}, {"BA (Hons)", "DPsych"}, {"BPsySc", "MProfPsych"}},
		qualsNZ: [][]string{{"MSc (Psych)", "PGDipClinPsych"}, {"PhD", "PGDipClinPsych"}},
		ahpra:   "PSY", registeredN: true,
		interests: []string{"anxiety", "depression", "trauma", "eating disorders", "perinatal mental health", "young people", "grief"}},
	profCounsellor: {titles: []string{"Counsellor", "Family therapist", "Senior counsellor"},
		qualsAU:   [][]string{{"MCouns"}, {"BCouns", "Grad Dip Family Therapy"}, {"BSW", "MCouns"}},
		qualsNZ:   [][]string{{"MCouns"}, {"BCouns"}},
		interests: []string{"relationships", "grief and loss", "family conflict", "gambling harm"}},
	profMHNurse: {titles: []string{"Mental health nurse", "Mental health clinician", "Team leader, mental health"},
		qualsAU: [][]string{{"BN", "Grad Dip Mental Health Nursing"}, {"BSW", "AMHSW"}, {"BOccThy", "MMentalHealth"}},
		qualsNZ: [][]string{{"BN", "PGDip Mental Health Nursing"}},
		ahpra:   "NMW", registeredN: true,
		interests: []string{"psychosis", "dual diagnosis", "recovery", "crisis support"}},
	profYouthWorker: {titles: []string{"Youth worker", "Youth mental health clinician", "Intake clinician"},
		qualsAU:   [][]string{{"BYouthWork"}, {"BSW"}, {"BPsych", "MCouns"}},
		qualsNZ:   [][]string{{"BYouthDev"}, {"BSW"}},
		interests: []string{"young people", "school refusal", "gender diversity", "alcohol and drugs"}},
	profAOD: {titles: []string{"AOD clinician", "Alcohol and drug counsellor", "Peer support worker"},
		qualsAU:   [][]string{{"Cert IV AOD"}, {"BSW", "Grad Cert AOD"}, {"BPsych"}},
		qualsNZ:   [][]string{{"BAppSocSc (Addiction)"}, {"NZDipAddiction"}},
		interests: []string{"harm reduction", "methamphetamine", "alcohol withdrawal", "family support"}},
	profPhysio: {titles: []string{"Physiotherapist", "Senior physiotherapist", "Sports physiotherapist"},
		qualsAU: [][]string{{"BPhty"}, {"BAppSc (Physio)"}, {"DPT"}, {"BPhysio", "MSportsPhysio"}},
		qualsNZ: [][]string{{"BHSc (Physiotherapy)"}, {"BPhty"}},
		ahpra:   "PHY", registeredN: true,
		interests: []string{"sports injuries", "back pain", "women's health", "rehabilitation after surgery", "falls prevention"}},
	profPodiatrist: {titles: []string{"Podiatrist", "Senior podiatrist"},
		qualsAU: [][]string{{"BPod"}, {"BHSc (Podiatry)"}},
		qualsNZ: [][]string{{"BHSc (Podiatry)"}},
		ahpra:   "POD", registeredN: true,
		interests: []string{"diabetes foot care", "orthotics", "children's feet", "wounds"}},
	profOT: {titles: []string{"Occupational therapist", "Paediatric occupational therapist"},
		qualsAU: [][]string{{"BOccThy"}, {"MOccThy"}},
		qualsNZ: [][]string{{"BHSc (Occupational Therapy)"}},
		ahpra:   "OCC", registeredN: true,
		interests: []string{"home modifications", "sensory processing", "return to work", "hand therapy"}},
	profSpeech: {titles: []string{"Speech pathologist", "Speech-language therapist"},
		qualsAU:   [][]string{{"BSpPath", "CPSP"}, {"MSpPath"}},
		qualsNZ:   [][]string{{"BSLT (Hons)"}},
		interests: []string{"stuttering", "early language", "swallowing", "voice"}},
	profDietitian: {titles: []string{"Accredited practising dietitian", "Dietitian"},
		qualsAU:     [][]string{{"BNutrDiet", "APD"}, {"MDiet", "APD"}},
		qualsNZ:     [][]string{{"MDiet", "NZRD"}},
		registeredN: true,
		interests:   []string{"diabetes", "food allergy", "eating disorders", "gut health"}},
	profEP: {titles: []string{"Accredited exercise physiologist", "Exercise physiologist"},
		qualsAU:   [][]string{{"BExSc", "MClinExPhys", "AEP"}},
		qualsNZ:   [][]string{{"BSc (Exercise Science)", "CEP"}},
		interests: []string{"cardiac rehabilitation", "diabetes", "chronic pain", "strength for older people"}},
	profAssessor: {titles: []string{"Aged care assessor", "Needs assessor", "Care coordinator"},
		qualsAU:   [][]string{{"BN", "RN"}, {"BSW"}, {"BOccThy"}},
		qualsNZ:   [][]string{{"BN", "RN"}, {"BSW"}},
		interests: []string{"dementia", "carer support", "home safety"}},
	profCareWorker: {titles: []string{"Community care worker", "Care coordinator", "Respite coordinator"},
		qualsAU:   [][]string{{"Cert III Individual Support"}, {"Cert IV Ageing Support"}},
		qualsNZ:   [][]string{{"NZ Cert Health and Wellbeing (Level 3)"}},
		interests: []string{"personal care", "social support", "dementia"}},
	profSupportCoord: {titles: []string{"Support coordinator", "Disability support worker", "Specialist support coordinator"},
		qualsAU:   [][]string{{"Cert IV Disability"}, {"BSW"}, {"BOccThy"}},
		qualsNZ:   [][]string{{"NZ Cert Health and Wellbeing (Level 4)"}, {"BSW"}},
		interests: []string{"psychosocial disability", "autism", "supported living"}},
	profCaseWorker: {titles: []string{"Case worker", "Senior case manager", "Intake worker", "Court support worker"},
		qualsAU:   [][]string{{"BSW"}, {"Dip Community Services"}, {"BSocSc"}},
		qualsNZ:   [][]string{{"BSW"}, {"NZ Dip Social Services"}},
		interests: []string{"safety planning", "crisis accommodation", "tenancy advocacy", "court support"}},
	profFinCounsellor: {titles: []string{"Financial counsellor"},
		qualsAU:   [][]string{{"Dip Financial Counselling"}},
		qualsNZ:   [][]string{{"NZ Cert Financial Capability"}},
		interests: []string{"debt", "utility hardship", "gambling harm"}},
	profEDPhysician: {titles: []string{"Emergency physician", "Emergency registrar", "Emergency nurse practitioner"}, dr: 0.9,
		qualsAU: [][]string{{"MBBS", "FACEM"}, {"MD", "FACEM"}},
		qualsNZ: [][]string{{"MBChB", "FACEM"}},
		ahpra:   "MED", registeredN: true,
		interests: []string{"trauma", "paediatric emergencies", "toxicology"}},
	profSpecialist: {titles: []string{"Consultant physician", "Cardiologist", "Endocrinologist", "Respiratory physician"}, dr: 1,
		qualsAU: [][]string{{"MBBS", "FRACP"}, {"MBBS", "PhD", "FRACP"}},
		qualsNZ: [][]string{{"MBChB", "FRACP"}},
		ahpra:   "MED", registeredN: true,
		interests: []string{"heart failure", "diabetes", "sleep disorders", "asthma"}},
	profCollector: {titles: []string{"Pathology collector", "Senior collector"},
		qualsAU:   [][]string{{"Cert III Pathology Collection"}},
		qualsNZ:   [][]string{{"Cert Phlebotomy"}},
		interests: []string{"children's blood tests", "anxious patients"}},
	profRadiologist: {titles: []string{"Radiologist", "Sonographer", "Medical radiation practitioner"}, dr: 0.4,
		qualsAU: [][]string{{"MBBS", "FRANZCR"}, {"BMedRad"}, {"Grad Dip Medical Ultrasound"}},
		qualsNZ: [][]string{{"MBChB", "FRANZCR"}, {"BHSc (MRT)"}},
		ahpra:   "MRP", registeredN: true,
		interests: []string{"musculoskeletal imaging", "obstetric ultrasound", "breast imaging"}},
	profPalliative: {titles: []string{"Palliative care physician", "Palliative care nurse"}, dr: 0.5,
		qualsAU: [][]string{{"MBBS", "FAChPM"}, {"BN", "Grad Cert Palliative Care"}},
		qualsNZ: [][]string{{"MBChB", "FAChPM"}},
		ahpra:   "MED", registeredN: true,
		interests: []string{"symptom control", "advance care planning", "care at home"}},
	profAHW: {titles: []string{"Aboriginal health worker", "Aboriginal and Torres Strait Islander health practitioner", "Aboriginal liaison officer"},
		qualsAU:   [][]string{{"Cert IV Aboriginal and/or Torres Strait Islander Primary Health Care Practice"}, {"Dip Aboriginal Health"}},
		qualsNZ:   [][]string{{"NZ Cert Health and Wellbeing (Level 4)"}, {"BHSc (Māori Health)"}},
		ahpra:     "ATS",
		interests: []string{"chronic disease", "maternal health", "social and emotional wellbeing", "ear health"}},
}

// Archetypes of organisations: what kind of organisation it is decides its name, its services and
// its ownership.
const (
	archCommunityHealth = iota
	archMedicalCentre
	archDental
	archPharmacy
	archAllied
	archMentalHealth
	archACCHO
	archFamilySafety
	archHousing
	archAgedDisability
	archYouth
	archHospital
	numArch
)

type archetype struct {
	weight   int
	big      bool     // may be a large organisation
	names    []string // {P} is a place word, {L} a locality, {S} a family name
	types    []string // service types, weighted by repetition; the first is the main one
	owners   []string // ownership codes, weighted by repetition; "cc" is the directory's own code
	hours    []int    // hours templates, weighted by repetition
	withheld float64  // chance that a site's address is withheld
	healthy  bool     // a health care provider (has an HPI-O in Australia)
}

// Hours templates.
const (
	hoursOffice = iota
	hoursClinic
	hoursSplit
	hoursExtended
	hoursAlways
	hoursPartTime
)

var archetypes = [numArch]archetype{
	archCommunityHealth: {weight: 9, big: true, healthy: true,
		names: []string{"{P} Community Health", "{P} Community Health Service", "{L} Health Centre", "{P} Health"},
		types: []string{"gp", "community_nursing", "community_nursing", "physiotherapy", "podiatry", "dietetics",
			"counselling", "community_mental_health", "aod", "maternal_child_health", "sexual_health", "public_dental",
			"occupational_therapy", "speech_pathology", "early_parenting", "financial_counselling"},
		owners: []string{"public", "public", "not_for_profit"},
		hours:  []int{hoursOffice, hoursOffice, hoursClinic}},
	archMedicalCentre: {weight: 22, healthy: true,
		names:  []string{"{L} Medical Centre", "{P} Family Practice", "{P} Medical Group", "{S} Street Medical Practice", "{L} Doctors"},
		types:  []string{"gp", "gp", "gp", "gp", "after_hours_gp", "psychology", "physiotherapy", "pathology", "community_nursing"},
		owners: []string{"private"},
		hours:  []int{hoursClinic, hoursClinic, hoursClinic, hoursExtended, hoursSplit, hoursOffice}},
	archDental: {weight: 9, healthy: true,
		names:  []string{"{P} Dental Care", "{L} Dental", "{P} Family Dentists", "Smile {P} Dental"},
		types:  []string{"dentist", "dentist", "dentist", "public_dental"},
		owners: []string{"private", "private", "private", "private", "public"},
		hours:  []int{hoursClinic, hoursClinic, hoursOffice, hoursSplit}},
	archPharmacy: {weight: 9, healthy: true,
		names:  []string{"{L} Pharmacy", "{P} Community Pharmacy", "{N}'s Pharmacy", "{L} Chemist"},
		types:  []string{"pharmacy"},
		owners: []string{"private"},
		hours:  []int{hoursExtended, hoursExtended, hoursClinic}},
	archAllied: {weight: 11, healthy: true,
		names: []string{"{P} Allied Health", "{L} Physiotherapy", "{P} Therapy Centre", "{P} Health and Movement"},
		types: []string{"physiotherapy", "physiotherapy", "podiatry", "occupational_therapy", "speech_pathology", "dietetics",
			"exercise_physiology", "psychology"},
		owners: []string{"private"},
		hours:  []int{hoursClinic, hoursOffice, hoursSplit}},
	archMentalHealth: {weight: 10, big: true, healthy: true,
		names:  []string{"{P} Psychology", "{P} Wellbeing Centre", "{P} Mind Health", "{P} Counselling Service"},
		types:  []string{"psychology", "psychology", "counselling", "community_mental_health", "youth_mental_health", "mental_health_crisis", "aod"},
		owners: []string{"not_for_profit", "not_for_profit", "private"},
		hours:  []int{hoursOffice, hoursOffice, hoursClinic}},
	archACCHO: {weight: 4, big: true, healthy: true,
		names: []string{"{P} Aboriginal Health Service", "{L} Aboriginal Medical Service", "{P} Aboriginal Corporation for Health"},
		types: []string{"aboriginal_health", "aboriginal_health", "gp", "maternal_child_health", "aod", "community_mental_health",
			"public_dental", "podiatry"},
		owners: []string{"cc"},
		hours:  []int{hoursOffice, hoursOffice, hoursClinic}},
	archFamilySafety: {weight: 5,
		names:  []string{"{P} Family Violence Service", "{P} Women's Safety Service", "{L} Domestic Violence Support"},
		types:  []string{"domestic_violence", "domestic_violence", "counselling", "housing_support", "financial_counselling"},
		owners: []string{"not_for_profit"},
		hours:  []int{hoursOffice, hoursOffice, hoursAlways}, withheld: 0.35},
	archHousing: {weight: 4,
		names:  []string{"{P} Housing Support", "{P} Community Housing", "{L} Homelessness Services", "{P} Community Care"},
		types:  []string{"housing_support", "housing_support", "financial_counselling", "emergency_relief"},
		owners: []string{"not_for_profit"},
		hours:  []int{hoursOffice, hoursOffice, hoursPartTime}, withheld: 0.05},
	archAgedDisability: {weight: 7, big: true,
		names:  []string{"{P} Aged and Disability Services", "{P} Home Care", "{L} Disability Support", "{P} Community Care"},
		types:  []string{"home_care", "home_care", "aged_care_assessment", "disability_support", "disability_support", "occupational_therapy", "podiatry"},
		owners: []string{"not_for_profit", "not_for_profit", "private", "public"},
		hours:  []int{hoursOffice, hoursOffice, hoursPartTime}},
	archYouth: {weight: 4,
		names:  []string{"{P} Youth Health Space", "{L} Youth Mental Health Hub", "{P} Youth Services"},
		types:  []string{"youth_mental_health", "youth_mental_health", "aod", "sexual_health", "counselling", "housing_support"},
		owners: []string{"not_for_profit"},
		hours:  []int{hoursOffice, hoursClinic}},
	archHospital: {weight: 3, big: true, healthy: true,
		names: []string{"{L} Hospital", "{P} Health Service", "{P} District Health Service", "{L} Base Hospital"},
		types: []string{"emergency_department", "hospital_outpatients", "hospital_outpatients", "radiology", "pathology",
			"palliative_care", "mental_health_crisis", "maternal_child_health"},
		owners: []string{"public"},
		hours:  []int{hoursAlways, hoursOffice}},
}

// Ownership displays.
var ownershipDisplay = []struct{ code, display string }{
	{"public", "Public"},
	{"private", "Private"},
	{"not_for_profit", "Not for profit"},
}

// Place words for organisation names.
var placeWordsAU = []string{
	"Riverside", "Eastside", "Westside", "Northside", "Southern", "Harbour", "Bayside", "Hillside", "Lakeside",
	"Valley", "Coastal", "Parkside", "Greenfield", "Inner City", "Tablelands", "Sunrise", "Wattle", "Banksia",
	"Jacaranda", "Bluewater", "Red Earth", "Saltbush", "Ironbark", "Kookaburra", "Seaview", "Creekside", "Ranges",
	"Golden Plains", "Midcoast", "Heartland", "Two Rivers", "Gumtree", "Brolga", "Sandstone", "Western Plains",
}

var placeWordsNZ = []string{
	"Riverside", "Harbourside", "Bayside", "Hillside", "Lakeside", "Coastal", "Te Awa", "Tōtara", "Kōwhai", "Rimu",
	"Pōhutukawa", "Mātai", "Kahikatea", "Southern", "Northern", "Eastside", "Westside", "Te Puna", "Manukau Harbour",
	"Valley", "Plains", "Tūī", "Kererū", "Waka", "Ranges",
}

var streetNamesAU = []string{
	"Smith", "George", "King", "Queen", "Victoria", "Albert", "Church", "Station", "High", "Main", "Bridge", "Park",
	"Railway", "Elizabeth", "Macquarie", "Oxford", "Anzac", "Bay", "Beach", "Ocean", "River", "Hill", "Forest",
	"Wattle", "Banksia", "Acacia", "Jacaranda", "Collins", "Bourke", "Flinders", "Hunter", "Pitt", "Grey", "Wickham",
	"Ann", "Charlotte", "Hay", "Murray", "Stirling", "Cook", "Banks", "Darling", "Lachlan", "Sturt", "Hume", "Kent",
	"York", "William", "Edward", "Mary", "Lonsdale", "Bell", "Gipps", "Mitchell", "Denison", "Bligh", "Phillip",
	"Ross", "Campbell", "Hobart", "Light", "Morphett", "Wellington", "Mulgrave", "Peel", "Forbes", "Sydney", "Regent",
}

var streetNamesNZ = []string{
	"Queen", "Victoria", "Tui", "Kowhai", "Rimu", "Totara", "Manuka", "Pohutukawa", "Kauri", "Rata", "Matai",
	"Great South", "Great North", "Cuba", "Willis", "Lambton", "Colombo", "Princes", "George", "Cameron", "Devon",
	"Grey", "Hobson", "Karaka", "Ngaio", "Miro", "Te Awa", "Aroha", "Wairere", "Heretaunga", "Seddon", "Ballance",
	"Vogel", "Fox", "Moana", "Marine", "Beach", "Church", "Station", "High", "Main", "Bridge", "Park",
}

var streetTypes = []string{
	"Street", "Street", "Street", "Street", "Road", "Road", "Road", "Avenue", "Avenue", "Parade", "Drive", "Lane",
	"Place", "Highway", "Crescent", "Terrace", "Boulevard", "Way", "Close", "Court",
}

var givenWoman = []string{
	"Olivia", "Charlotte", "Amelia", "Isla", "Mia", "Grace", "Sophie", "Emily", "Chloe", "Sarah", "Jessica",
	"Rebecca", "Hannah", "Priya", "Anjali", "Mei", "Linh", "Hoa", "Maria", "Sofia", "Eleni", "Fatima", "Aisha",
	"Leila", "Yasmin", "Kirra", "Siobhan", "Catherine", "Margaret", "Helen", "Deborah", "Alison", "Joanne",
	"Nicole", "Kate", "Lucy", "Zoe", "Ruby", "Harper", "Ayesha", "Yuki", "Min-ji", "Ngoc", "Georgia", "Naomi",
	"Tahlia", "Jacinta", "Bronwyn", "Anh", "Xin", "Divya", "Mariam", "Rana", "Chiara", "Ivana", "Ana",
}

var givenMan = []string{
	"Oliver", "Jack", "William", "Noah", "Thomas", "James", "Lachlan", "Liam", "Ethan", "Daniel", "Matthew",
	"Andrew", "David", "Michael", "Peter", "Raj", "Arjun", "Vikram", "Wei", "Jun", "Minh", "Duc", "Ahmed", "Omar",
	"Karim", "George", "Nikos", "Marco", "Luca", "Connor", "Patrick", "Samuel", "Hamish", "Angus", "Benjamin",
	"Joshua", "Hiroshi", "Ji-ho", "Tuan", "Hassan", "Dimitri", "Stefan", "Aaron", "Nathan", "Rohan", "Sanjay",
	"Khoa", "Bilal", "Mateo", "Callum", "Darcy",
}

var givenNeutral = []string{
	"Alex", "Sam", "Jordan", "Taylor", "Jamie", "Riley", "Charlie", "Casey", "Robin", "Ash", "Kai", "Jesse",
	"Morgan", "Quinn", "Jarrah", "Rowan", "Sasha", "Remy", "Ari", "Eden",
}

var givenWomanNZ = []string{"Aroha", "Mere", "Ngaio", "Hine", "Kiri", "Anahera", "Sina", "Talia", "Losa", "Mele", "Moana", "Ataahua"}
var givenManNZ = []string{"Hemi", "Tāne", "Wiremu", "Rāwiri", "Nikau", "Sione", "Tavita", "Ioane", "Manaia", "Tama", "Rangi"}

var familyNames = []string{
	"Smith", "Jones", "Williams", "Brown", "Wilson", "Taylor", "Johnson", "White", "Martin", "Anderson",
	"Thompson", "Nguyen", "Tran", "Le", "Pham", "Chen", "Wang", "Li", "Zhang", "Liu", "Huang", "Patel", "Singh",
	"Sharma", "Kumar", "Shah", "Papadopoulos", "Georgiou", "Nikolaidis", "Rossi", "Russo", "Romano", "Esposito",
	"Khoury", "Haddad", "Nasser", "Ahmed", "Hussein", "O'Brien", "Murphy", "Kelly", "Ryan", "Walsh", "McDonald",
	"Campbell", "Stewart", "Robertson", "Kim", "Park", "Lee", "Choi", "Tanaka", "Sato", "Fernandes", "Silva",
	"Santos", "Garcia", "Lopez", "Kovač", "Novak", "Müller", "Schmidt", "Jansen", "de Vries", "Mitchell", "Clarke",
	"Hughes", "Edwards", "Moore", "King", "Wright", "Scott", "Green", "Baker", "Hall", "Young", "Allen", "Harris",
	"Lewis", "Walker", "Bui", "Vo", "Dang", "Hoang", "Das", "Iyer", "Reddy", "Ali", "Karimi", "Hosseini",
	"Costa", "Ferrari", "Morgan", "Fraser", "Sinclair", "Doyle", "Byrne",
}

var familyNamesNZ = []string{
	"Ngata", "Parata", "Tipene", "Te Rangi", "Henare", "Tuhiwai", "Rangi", "Faleolo", "Tuilagi", "Fifita",
	"Vaifale", "Lemalu", "Tupou", "Walker", "Horomona", "Pōtae", "Kereama", "Tapsell", "Wihongi", "Aumua",
}

var languagesAU = []string{"vi", "zh", "yue", "ar", "el", "it", "hi", "pa", "ko", "es", "tl", "fa", "asf", "ne", "ta"}
var languagesNZ = []string{"mi", "mi", "sm", "to", "zh", "hi", "nzs", "ko", "tl", "fj"}

var ownTermsAU = []string{"genderqueer", "agender", "sistergirl", "brotherboy", "genderfluid"}
var ownTermsNZ = []string{"takatāpui", "fa'afafine", "genderqueer", "agender", "whakawāhine"}

var facilities = []string{"wheelchair_access", "accessible_toilet", "parking", "hearing_loop", "public_transport", "interpreter_booth", "baby_change"}

var afterHoursText = []string{
	"In an emergency call 000. After hours, phone the clinic and follow the message to reach the on-call doctor.",
	"Outside these hours, contact your nearest after-hours GP or the national health advice line.",
	"After hours, the crisis line on this page is answered 24 hours a day.",
	"If you need help outside these hours, go to the nearest emergency department.",
	"Home visits by the after-hours doctor service are available on weeknights and weekends.",
}

var afterHoursTextNZ = []string{
	"In an emergency call 111. After hours, phone the practice and your call will go to the after-hours nurse.",
	"Outside these hours, call Healthline or visit your nearest urgent care clinic.",
	"After hours, the crisis line on this page is answered 24 hours a day.",
	"If you need help outside these hours, go to the nearest emergency department.",
}

// Titles of senior management.
var executiveTitles = []string{"Chief Executive Officer", "Chief Operating Officer", "Director of Clinical Services",
	"Chief Financial Officer", "Medical Director", "Director of Nursing", "General Manager, Community Programs"}
var boardTitles = []string{"Chair", "Deputy Chair", "Treasurer", "Director", "Director", "Director", "Company Secretary"}

var leaderBios = []string{
	"%s has worked in community health for more than twenty years and leads the organisation's strategy and partnerships.",
	"%s joined from a metropolitan health service, where they ran outpatient and community programs.",
	"%s is a clinician by training and chairs the clinical governance committee.",
	"%s brings experience in finance and governance from the not-for-profit sector.",
	"%s is a long-standing member of the local community and has served on several health boards.",
}

var staffNotes = []string{
	"Prefers contact through the executive assistant; do not publish the direct line.",
	"On extended leave until the end of the quarter; the deputy acts in the role.",
	"Declared a conflict of interest for the current tender; keep off the selection panel.",
	"Mobile number is personal; use only for urgent board matters.",
	"Term renewal due at the next annual general meeting.",
}
