// Deep research mode: with "Deep research" ticked, the form starts a research instead of a question; its plan and
// each sub-question's progress stream in, then the report with its sources and each claim's verdict.
// Every text from the model or the web goes in with textContent, never as HTML.
(function(){
"use strict";
var $=function(s){return document.querySelector(s);};
var key=null, events=null;

var el=window.agentPage.el, money=window.agentPage.money, safeHref=window.agentPage.safeHref;  // app.js's
function running(on){ $("#stop").classList.toggle("hidden",!on); $("#send").disabled=on; }
function status(text){ $("#status").textContent=text||""; }

function researchEl(question){
  var t=el("article","turn research"); t.appendChild(el("p","question",question));
  t.appendChild(el("p","meta phase","planning the sub-questions…"));
  t.appendChild(el("ol","plan")); $("#turns").appendChild(t); return t;
}

function renderPlan(box, questions){
  var ol=box.querySelector(".plan"); ol.textContent="";
  questions.forEach(function(q){
    var li=el("li","sub"); li.dataset.n=q.n; li.appendChild(el("span",null,q.text));
    li.appendChild(el("span","verdict state","waiting")); ol.appendChild(li);
  });
}

function renderSub(box, e){
  var li=box.querySelector('.plan li[data-n="'+e.n+'"]'); if(!li) return;
  var state=li.querySelector(".state");
  state.textContent=e.state+(e.done&&e.sources!==undefined?" · "+e.sources+(e.sources===1?" source":" sources"):"");
  state.className="verdict state"+(e.done?(e.state.indexOf("answered")===0?" supported":" unsupported"):"");
}

function renderReport(box, r, html){
  var out=el("section","answer"+(r.partial||r.nothing_read?" failed":""));
  out.appendChild(el("h3",null,r.title));
  if(r.partial) out.appendChild(el("p","note","Partial report: "+r.partial));
  var cited=(r.citations||[]);
  if(cited.length){
    var counts={}; cited.forEach(function(c){counts[c.verdict]=(counts[c.verdict]||0)+1;});
    out.appendChild(el("p","claims",cited.length+" claims: "+Object.keys(counts).map(function(k){
      return counts[k]+" "+k.replace("_"," ");}).join(", ")+(r.marked?" · "+r.marked+" marked ⚠ unsupported":"")));
  }
  out.appendChild(bodyOf(r.body));
  if((r.sources||[]).length){
    out.appendChild(el("h4",null,"Sources"));
    var ol=el("ol","sources");
    r.sources.forEach(function(s){
      var li=el("li"); li.value=s.n; var href=safeHref(s.url);
      var link=el(href?"a":"span",null,s.title||s.url); if(href){link.href=href; link.rel="noreferrer noopener"; link.target="_blank";}
      li.appendChild(link); ol.appendChild(li);
    });
    out.appendChild(ol);
  }
  if(cited.length){
    out.appendChild(el("h4",null,"Citations checked"));
    var ul=el("ul","citations");
    cited.forEach(function(c){
      var li=el("li"); li.appendChild(el("span","verdict "+c.verdict,c.verdict.replace("_"," ")));
      li.appendChild(document.createTextNode(" "+(c.n===null?"":"["+c.n+"] ")+c.claim)); ul.appendChild(li);
    });
    out.appendChild(ul);
  }
  var more=el("p","meta",money(r.cost)+" · ");
  var a=el("a",null,"open the full report (sources, the passages each claim was judged against)"); a.href=html; a.target="_blank";
  more.appendChild(a); out.appendChild(more);
  box.appendChild(out);
}

// The writer's Markdown as the page shows it: a `## ` line is a heading, other lines paragraphs; all as text.
function bodyOf(text){
  var div=el("div","text"), para=[];
  function flush(){ if(para.join("").trim()) div.appendChild(el("p",null,para.join("\n").trim())); para=[]; }
  String(text||"").split("\n").forEach(function(line){
    var m=/^#{1,4}[ \t]+(.+)$/.exec(line);
    if(m){ flush(); div.appendChild(el("h4","section",m[1])); }
    else if(!line.trim()) flush();
    else para.push(line);
  });
  flush();
  return div;
}

function listen(box){
  if(events) events.close();
  events=new EventSource("/api/research/"+encodeURIComponent(key)+"/events");
  events.onmessage=function(m){
    var e=JSON.parse(m.data);
    if(e.type==="plan") renderPlan(box, e.questions);
    else if(e.type==="sub") renderSub(box, e);
    else if(e.type==="phase") box.querySelector(".phase").textContent=e.text;
    else if(e.type==="report"){ box.querySelector(".phase").textContent=""; renderReport(box, e.report, e.html); }
    else if(e.type==="failed"){ box.appendChild(el("p","answer failed","The research failed: "+e.error)); }
  };
  events.addEventListener("end",function(){ events.close(); events=null; key=null; running(false); status(""); });
}

function start(ev){
  if(ev.target!==$("#ask")||!$("#deep").checked) return;  // an ordinary question: app.js asks it
  ev.preventDefault(); ev.stopImmediatePropagation(); if(key) return;
  var q=$("#question").value.trim(); if(!q) return;
  var fd=new FormData(); fd.append("question",q);
  var f=$("#file").files[0]; if(f) fd.append("file",f);
  running(true); status("researching…");
  fetch("/api/research",{method:"POST",body:fd,credentials:"same-origin"}).then(function(r){
    return r.json().then(function(j){ if(!r.ok) throw new Error(j.error||r.statusText); return j; });
  }).then(function(j){
    key=j.research; var box=researchEl(q); $("#question").value=""; $("#file").value=""; listen(box);
  }).catch(function(err){ running(false); status("error: "+err.message); });
}

function stop(ev){
  if(!key||!ev.target.closest||!ev.target.closest("#stop")) return;
  ev.stopImmediatePropagation();
  fetch("/api/research/"+encodeURIComponent(key)+"/stop",{method:"POST",credentials:"same-origin"});
  status("stopping: the report is written from what was found…");
}

// On the document, capturing: before app.js's own listeners on the form and the Stop button.
document.addEventListener("submit",start,true);
document.addEventListener("click",stop,true);
})();
